package kcfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"streamscale/serve/runtime/ops"
)

func TestExplain(t *testing.T) {
	if e := explain(fs.ErrPermission).Error(); !strings.Contains(e, "not permitted") || !strings.Contains(e, "root") {
		t.Errorf("permission: %q", e)
	}
	if e := explain(syscall.EROFS).Error(); !strings.Contains(e, "read-only") {
		t.Errorf("EROFS: %q", e)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := []ops.Record{{Key: 1, Input: 2, Seq: 3, Payload: []byte("abc")}, {Key: 1 << 63, Payload: nil}}
	body := AppendBatch(nil, 42, recs)
	id, got, err := DecodeBatch(body, nil)
	if err != nil || id != 42 || len(got) != 2 {
		t.Fatalf("decode: %d %v %v", id, got, err)
	}
	for i := range recs {
		if got[i].Key != recs[i].Key || got[i].Input != recs[i].Input || got[i].Seq != recs[i].Seq || !bytes.Equal(got[i].Payload, recs[i].Payload) {
			t.Errorf("record %d: %+v, want %+v", i, got[i], recs[i])
		}
	}
	for n := range body {
		if _, _, err := DecodeBatch(body[:n], nil); err == nil {
			t.Errorf("batch truncated to %d of %d bytes accepted", n, len(body))
		}
	}
	if _, _, err := DecodeBatch(append(body, 0), nil); err == nil {
		t.Error("batch with a trailing byte accepted")
	}
}

func TestResultRoundTrip(t *testing.T) {
	r := Result{ID: 7, Failed: []bool{false, true, false}, Emits: []Emit{{Parent: 0, To: 3, Key: 9, Payload: []byte("x")}, {Parent: 2, To: 1, Key: 1}},
		ProcCPU: time.Second, Charged: time.Millisecond, Periods: 5, Throttled: 2, Exec: time.Microsecond}
	body := AppendResult(nil, &r)
	var got Result
	if err := DecodeResult(body, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(AppendResult(nil, &got), body) {
		t.Errorf("re-encoded result differs: %+v", got)
	}
	for n := range body {
		if err := DecodeResult(body[:n], &got); err == nil {
			t.Errorf("result truncated to %d of %d bytes accepted", n, len(body))
		}
	}
	for _, c := range []struct {
		emits []Emit
		want  string
	}{
		{[]Emit{{Parent: 3}}, "parent 3 of 3 records"},
		{[]Emit{{Parent: 2}, {Parent: 0}}, "parent 0 after parent 2"},
		{[]Emit{{Parent: 1}}, "record 1 failed"},
	} {
		bad := r
		bad.Emits = c.emits
		if err := DecodeResult(AppendResult(nil, &bad), &got); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("emits %+v: %v, want %q", c.emits, err, c.want)
		}
	}
}

func TestHelloRoundTrip(t *testing.T) {
	h := hello{mode: Kernel, millicores: 250, period: DefaultPeriod, app: "pred", op: 2}
	got, err := decodeHello(appendHello(nil, h))
	if err != nil || got != h {
		t.Fatalf("hello: %+v, %v; want %+v", got, err, h)
	}
	for _, bad := range []hello{{mode: 9, millicores: 1, period: 1}, {mode: Kernel, millicores: 0, period: 1}, {mode: Kernel, millicores: 1, period: 2 * time.Second}} {
		if _, err := decodeHello(appendHello(nil, bad)); err == nil {
			t.Errorf("hello %+v accepted", bad)
		}
	}
}

func TestReadFrame(t *testing.T) {
	var b bytes.Buffer
	if err := writeFrame(&b, tBatch, []byte("body")); err != nil {
		t.Fatal(err)
	}
	typ, body, _, err := readFrame(&b, nil)
	if err != nil || typ != tBatch || string(body) != "body" {
		t.Fatalf("frame: %d %q %v", typ, body, err)
	}
	if _, _, _, err := readFrame(&b, nil); !errors.Is(err, io.EOF) {
		t.Errorf("end of stream: %v, want io.EOF", err)
	}
	huge := binary.LittleEndian.AppendUint32(nil, MaxFrame+1)
	if _, _, _, err := readFrame(bytes.NewReader(huge), nil); err == nil || !strings.Contains(err.Error(), "frame length") {
		t.Errorf("oversized frame: %v", err)
	}
	short := append(binary.LittleEndian.AppendUint32(nil, 10), 1, 2)
	if _, _, _, err := readFrame(bytes.NewReader(short), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzDecodeBatch: any body either fails or decodes to records that
// encode to a body decoding to the same records.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(AppendBatch(nil, 1, []ops.Record{{Key: 1, Payload: []byte("p")}}))
	f.Add(AppendBatch(nil, 0, nil))
	f.Add([]byte{1, 2, 3})
	f.Add(append(AppendBatch(nil, 5, nil)[:8], 0xff, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, body []byte) {
		id, recs, err := DecodeBatch(body, nil)
		if err != nil {
			if len(recs) != 0 {
				t.Fatalf("failed decode returned %d records", len(recs))
			}
			return
		}
		// Uvarints have non-minimal encodings, so compare decoded values.
		id2, recs2, err := DecodeBatch(AppendBatch(nil, id, recs), nil)
		if err != nil || id2 != id || len(recs2) != len(recs) {
			t.Fatalf("re-encoded batch: id %d→%d, %d→%d records, %v", id, id2, len(recs), len(recs2), err)
		}
		for i := range recs {
			a, b := recs[i], recs2[i]
			if a.Key != b.Key || a.Input != b.Input || a.Seq != b.Seq || !bytes.Equal(a.Payload, b.Payload) {
				t.Fatalf("record %d: %+v → %+v", i, a, b)
			}
		}
	})
}

// FuzzDecodeResult: any body either fails or decodes to a result whose
// emits name records of the batch.
func FuzzDecodeResult(f *testing.F) {
	f.Add(AppendResult(nil, &Result{ID: 1, Failed: []bool{true, false}, Emits: []Emit{{Parent: 1, To: 2, Key: 3, Payload: []byte("a")}}}))
	f.Add(AppendResult(nil, &Result{}))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Result
		if err := DecodeResult(body, &r); err != nil {
			if len(r.Failed) != 0 || len(r.Emits) != 0 {
				t.Fatalf("failed decode left %d flags, %d emits", len(r.Failed), len(r.Emits))
			}
			return
		}
		for i, e := range r.Emits {
			if e.Parent < 0 || e.Parent >= len(r.Failed) || e.To < 0 || e.To >= 1<<16 || r.Failed[e.Parent] || (i > 0 && e.Parent < r.Emits[i-1].Parent) {
				t.Fatalf("emit %d %+v of %d records %v", i, e, len(r.Failed), r.Failed)
			}
		}
		if r.ProcCPU < 0 || r.Charged < 0 || r.Periods < 0 || r.Throttled < 0 || r.Exec < 0 {
			t.Fatalf("negative counters %+v", r)
		}
	})
}

// FuzzServe feeds a task host arbitrary bytes after a valid hello: it must
// answer or stop with an error, never panic.
func FuzzServe(f *testing.F) {
	var ok bytes.Buffer
	writeFrame(&ok, tBatch, AppendBatch(nil, 1, []ops.Record{{Key: 1, Payload: []byte("x")}})) //nolint:errcheck // bytes.Buffer
	f.Add(ok.Bytes())
	f.Add([]byte{5, 0, 0, 0, tSet, 1, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 99})
	f.Add(appendHello(nil, hello{mode: InProcess, millicores: 1, period: 1, app: "wc"}))
	f.Fuzz(func(t *testing.T, rest []byte) {
		var in bytes.Buffer
		writeFrame(&in, tHello, appendHello(nil, hello{mode: Kernel, millicores: 100, period: DefaultPeriod, app: "wc", op: 0})) //nolint:errcheck // bytes.Buffer
		in.Write(rest)
		Serve(&in, io.Discard, ops.AppByName) //nolint:errcheck // bad input may fail; it must not panic
	})
}

// FuzzHello: arbitrary first frames are refused with an error frame.
func FuzzHello(f *testing.F) {
	f.Add(appendHello(nil, hello{mode: Kernel, millicores: 100, period: DefaultPeriod, app: "wc"}))
	f.Add(appendHello(nil, hello{mode: InProcess, millicores: 100, period: DefaultPeriod, app: "nope", op: 3}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := decodeHello(body); err != nil {
			return
		}
		var in, out bytes.Buffer
		writeFrame(&in, tHello, body)   //nolint:errcheck // bytes.Buffer
		Serve(&in, &out, ops.AppByName) //nolint:errcheck // may refuse the app
		typ, _, _, err := readFrame(&out, nil)
		if err != nil || (typ != tReady && typ != tError) {
			t.Fatalf("answer to a valid hello: type %d, %v", typ, err)
		}
	})
}
