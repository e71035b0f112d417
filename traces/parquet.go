package traces

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// ReadParquet reads the top-level "count" column of the Parquet file of size
// bytes in r. The column must be of physical type INT32, INT64, FLOAT or
// DOUBLE, not repeated, and hold no nulls; its values must be finite and ≥ 0
// and there must be at least one row. name is used only in error messages,
// which give it with the 1-based row number.
func ReadParquet(r io.ReaderAt, size int64, name string) (counts []float64, err error) {
	// parquet-go may panic on a corrupt file; bad input must not panic here.
	defer func() {
		if p := recover(); p != nil {
			counts, err = nil, fmt.Errorf("traces: %s: malformed parquet file: %v", name, p)
		}
	}()
	if err := checkFrame(r, size); err != nil {
		return nil, fmt.Errorf("traces: %s: %w", name, err)
	}
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("traces: %s: %w", name, err)
	}
	leaf, ok := f.Schema().Lookup(countColumn)
	if !ok {
		for _, fld := range f.Schema().Fields() {
			if fld.Name() == countColumn {
				return nil, fmt.Errorf("traces: %s: %q column is nested (a list or group), want one value per row", name, countColumn)
			}
		}
		return nil, fmt.Errorf("traces: %s: no %q column", name, countColumn)
	}
	if leaf.MaxRepetitionLevel > 0 {
		return nil, fmt.Errorf("traces: %s: %q column is repeated, want one value per row", name, countColumn)
	}
	kind := leaf.Node.Type().Kind()
	switch kind {
	case parquet.Int32, parquet.Int64, parquet.Float, parquet.Double:
	default:
		return nil, fmt.Errorf("traces: %s: %q column has type %v, want int32, int64, float or double", name, countColumn, kind)
	}

	buf := make([]parquet.Value, 1024)
	row := 0
	for _, rg := range f.RowGroups() {
		chunks := rg.ColumnChunks()
		if leaf.ColumnIndex >= len(chunks) {
			return nil, fmt.Errorf("traces: %s: row group lacks the %q column", name, countColumn)
		}
		counts, row, err = readChunk(chunks[leaf.ColumnIndex], kind, buf, counts, row, name)
		if err != nil {
			return nil, err
		}
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("traces: %s: no data rows", name)
	}
	return counts, nil
}

// parquetMagic starts and ends every Parquet file.
const parquetMagic = "PAR1"

// checkFrame checks the magic numbers and the footer length of a Parquet
// file of size bytes. parquet-go allocates a buffer of the footer length the
// file declares before reading it, so a corrupt length would allocate up to
// 4 GiB.
func checkFrame(r io.ReaderAt, size int64) error {
	const frame = int64(2*len(parquetMagic) + 4) // leading magic, footer length, trailing magic
	if size < frame {
		return fmt.Errorf("not a parquet file: %d bytes", size)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return fmt.Errorf("reading parquet header: %w", err)
	}
	if _, err := r.ReadAt(tail[:], size-int64(len(tail))); err != nil {
		return fmt.Errorf("reading parquet footer: %w", err)
	}
	if string(head[:]) != parquetMagic || string(tail[4:]) != parquetMagic {
		return errors.New("not a parquet file: no PAR1 magic")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-frame {
		return fmt.Errorf("corrupt parquet file: footer of %d bytes in a %d-byte file", n, size)
	}
	return nil
}

// readChunk appends the values of one column chunk to counts; row is the
// number of rows read before it.
func readChunk(cc parquet.ColumnChunk, kind parquet.Kind, buf []parquet.Value, counts []float64, row int, name string) ([]float64, int, error) {
	vr := parquet.NewColumnChunkValueReader(cc)
	defer vr.Close()
	for {
		n, err := vr.ReadValues(buf)
		for _, v := range buf[:n] {
			row++
			if v.IsNull() {
				return nil, row, fmt.Errorf("traces: %s: row %d: count is null", name, row)
			}
			var x float64
			switch kind {
			case parquet.Int32:
				x = float64(v.Int32())
			case parquet.Int64:
				x = float64(v.Int64())
			case parquet.Float:
				x = float64(v.Float())
			default:
				x = v.Double()
			}
			x, cerr := checkCount(x)
			if cerr != nil {
				return nil, row, fmt.Errorf("traces: %s: row %d: %w", name, row, cerr)
			}
			counts = append(counts, x)
		}
		if errors.Is(err, io.EOF) {
			return counts, row, nil
		}
		if err != nil {
			return nil, row, fmt.Errorf("traces: %s: after row %d: %w", name, row, err)
		}
	}
}

// parquetRow is the schema written by WriteParquet.
type parquetRow struct {
	Count float64 `parquet:"count"`
}

// WriteParquet writes counts as a Parquet file with one DOUBLE column,
// "count", that [ReadParquet] reads back unchanged. It refuses what
// ReadParquet would refuse: no counts, or a count that is not finite or is
// negative.
func WriteParquet(w io.Writer, counts []float64) error {
	if len(counts) == 0 {
		return errors.New("traces: no counts to write")
	}
	rows := make([]parquetRow, len(counts))
	for i, c := range counts {
		v, err := checkCount(c)
		if err != nil {
			return fmt.Errorf("traces: counts[%d]: %w", i, err)
		}
		rows[i].Count = v
	}
	pw := parquet.NewGenericWriter[parquetRow](w)
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("traces: writing parquet: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("traces: writing parquet: %w", err)
	}
	return nil
}
