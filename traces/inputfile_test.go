package traces

import "testing"

func TestInputFileOfEachScheme(t *testing.T) {
	cases := []struct {
		spec, file string
		ok         bool
		moved      string
	}{
		{"gen:diurnal", "", false, "gen:diurnal"},
		{"", "", false, ""},
		{"trace:/a/b.csv?time=t&key=k", "/a/b.csv", true, "trace:/tmp/x?time=t&key=k"},
		{"trace:rel/b.tsv.gz", "rel/b.tsv.gz", true, "trace:/tmp/x"},
		{"rate:/r/per_second.tbz2?zipf=1.2", "/r/per_second.tbz2", true, "rate:/tmp/x?zipf=1.2"},
		{"trace:?time=t", "", false, "trace:?time=t"},
	}
	for _, tc := range cases {
		file, ok := InputFile(tc.spec)
		if file != tc.file || ok != tc.ok {
			t.Errorf("InputFile(%q) = %q, %v; want %q, %v", tc.spec, file, ok, tc.file, tc.ok)
		}
		if got := WithInputFile(tc.spec, "/tmp/x"); got != tc.moved {
			t.Errorf("WithInputFile(%q) = %q, want %q", tc.spec, got, tc.moved)
		}
	}
}
