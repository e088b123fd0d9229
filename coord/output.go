package coord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"spate/job"
	"spate/state"
	"spate/stores"
)

// The sinks' output through the output store: a sink that sees the run
// directory writes output/SINK-I-gG.jsonl as a file; one that writes
// through the coordinator or an object store writes it as immutable
// segments (stores.Log). Either way the output manifest, MANIFEST.json in
// the same store, written whole, bounds each older generation's file to
// its committed length.

// outputManifestName is the output manifest's name in the output store.
const outputManifestName = "MANIFEST.json"

// readOutputManifest reads the output manifest from st (absent: no
// limits).
func readOutputManifest(st state.Store) (OutputManifest, error) {
	om := OutputManifest{Limits: map[string]int64{}}
	b, err := st.Get(outputManifestName)
	if errors.Is(err, state.ErrNotFound) {
		return om, nil
	}
	if err != nil {
		return om, err
	}
	if err := json.Unmarshal(b, &om); err != nil {
		return om, fmt.Errorf("output/%s: %v", outputManifestName, err)
	}
	if om.Limits == nil {
		om.Limits = map[string]int64{}
	}
	return om, nil
}

// readOutputStore reads every sink output file in st, files and segmented
// logs alike, each bounded by the manifest's limit. A file whose last
// line a kill cut short (job.ErrTornLine) counts up to that line.
func readOutputStore(st state.Store) (all []job.Result, torn int, err error) {
	om, err := readOutputManifest(st)
	if err != nil {
		return nil, 0, err
	}
	logs, plain, err := stores.Logs(st)
	if err != nil {
		return nil, 0, err
	}
	type file struct {
		name string
		segs []string // nil: a plain file
	}
	var files []file
	for _, n := range plain {
		if path.Ext(n) == ".jsonl" && !strings.Contains(n, "/") {
			files = append(files, file{name: n})
		}
	}
	for n, segs := range logs {
		files = append(files, file{name: n, segs: segs})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	for i := 1; i < len(files); i++ {
		if files[i].name == files[i-1].name {
			return nil, 0, fmt.Errorf("output/%s: both a file and segments", files[i].name)
		}
	}
	for _, f := range files {
		var data []byte
		if f.segs != nil {
			data, err = stores.ReadLog(st, f.name, f.segs)
		} else {
			data, err = st.Get(f.name)
		}
		if err != nil {
			return nil, 0, err
		}
		if limit, ok := om.Limits[f.name]; ok && limit < int64(len(data)) {
			data = data[:max(limit, 0)] // a recovered sink: only the committed prefix counts
		}
		all = slices.Grow(all, bytes.Count(data, []byte{'\n'})+1) // a result a line
		all, err = job.AppendResults(all, bytes.NewReader(data), "output/"+f.name)
		if errors.Is(err, job.ErrTornLine) {
			torn, err = torn+1, nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
	return all, torn, nil
}
