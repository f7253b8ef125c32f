package chaos

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed round keeps, beside its replicas' logs, what the control plane's
// components (etcd, kube-apiserver, kube-scheduler, kube-controller-manager,
// kwok) logged during that round, gzipped: aws 3090's total outage stayed
// unexplained because its control-plane logs went with the test's
// temporary run directory, and aws 3130's were read only because they
// were copied by hand. A whole world's logs run to tens of MB (with
// CHAOS_CP_RUNDIR's -v=4), a round's gzipped part to a few hundred kB.

// logMarks are the sizes of a directory's logs at one moment.
type logMarks map[string]int64

// markLogs records how far each log in dir reaches now.
func markLogs(dir string) logMarks {
	marks := logMarks{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			marks[e.Name()] = info.Size()
		}
	}
	return marks
}

// keepLogsSince writes what each log in dir gained since marks (the whole
// of a log that is new) to into/<name>.gz, skipping logs that gained
// nothing.
func keepLogsSince(dir string, marks logMarks, into string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	if err := os.MkdirAll(into, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", into, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := keepLogSince(filepath.Join(dir, e.Name()), marks[e.Name()], filepath.Join(into, e.Name()+".gz")); err != nil {
			return err
		}
	}
	return nil
}

func keepLogSince(path string, from int64, to string) error {
	in, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if info.Size() < from {
		from = 0 // the log was replaced meanwhile: all of it is the round's
	}
	if info.Size() == from {
		return nil
	}
	if _, err := in.Seek(from, io.SeekStart); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	out, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("creating %s: %w", to, err)
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	return nil
}

func TestKeepLogsSince(t *testing.T) {
	dir, into := t.TempDir(), filepath.Join(t.TempDir(), "cp")
	write := func(name, text string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("kube-apiserver.log", "before the round\n")
	write("kwok.log", "before the round\n")
	write("etcd.log", "before the round\n")
	marks := markLogs(dir)
	write("kube-apiserver.log", "during the round\n")
	write("kwok.log", "during the round\nand more\n")
	write("kube-controller-manager.log", "started during the round\n")
	if err := keepLogsSince(dir, marks, into); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kube-apiserver.log.gz":          "during the round\n",
		"kwok.log.gz":                    "during the round\nand more\n",
		"kube-controller-manager.log.gz": "started during the round\n",
	}
	entries, err := os.ReadDir(into)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		f, err := os.Open(filepath.Join(into, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if string(b) != want[e.Name()] {
			t.Errorf("%s holds %q, want %q", e.Name(), b, want[e.Name()])
		}
	}
	if len(got) != len(want) {
		t.Errorf("kept %s, want the %d logs that grew during the round (etcd.log did not)", strings.Join(got, ", "), len(want))
	}
}
