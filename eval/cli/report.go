package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"streamscale/eval/report"
	"streamscale/internal/command"
)

// maxDocBytes bounds a markdown document or summary `eval report` reads.
const maxDocBytes = 16 << 20

func reportCmd(ctx context.Context, args []string, o Options) error {
	fset := command.NewFlagSet("eval report")
	into := fset.String("into", "", "comma-separated markdown files to render the tables of (default: README.md and every .md under docs/)")
	root := fset.String("root", ".", "repository root: marker paths and -into are relative to it")
	check := fset.Bool("check", false, "change nothing; fail naming every file whose tables differ from their summaries")
	if err := parseFlags(fset, args, o); err != nil {
		return err
	}
	files, err := reportFiles(*root, *into)
	if err != nil {
		return err
	}
	load := func(p string) ([]byte, error) { return readBounded(filepath.Join(*root, filepath.FromSlash(p))) }
	var stale []string
	for _, f := range files {
		path := filepath.Join(*root, f)
		doc, err := readBounded(path)
		if err != nil {
			return err
		}
		got, err := report.Render(doc, load)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if bytes.Equal(got, doc) {
			continue
		}
		if *check {
			stale = append(stale, f)
			continue
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		fmt.Fprintf(o.Stderr, "eval report: rendered %s\n", f)
	}
	if len(stale) > 0 {
		return fmt.Errorf("eval: tables differ from their summaries in %s (run go run ./eval report)", strings.Join(stale, ", "))
	}
	return nil
}

// reportFiles lists the documents to render: those of into, or README.md
// and every .md file under docs/, relative to root, in path order.
func reportFiles(root, into string) ([]string, error) {
	if into != "" {
		return splitList("into", into)
	}
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	slices.Sort(files[1:])
	return files, nil
}

// readBounded reads a regular file of at most maxDocBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("eval: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxDocBytes+1))
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if len(b) > maxDocBytes {
		return nil, fmt.Errorf("eval: %s is over the %d MiB limit", path, maxDocBytes>>20)
	}
	return b, nil
}
