package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RunReport builds the report of any finished run in dir: a plain
// `spate up`, `up --script`, `chaos run` or a kept benchmark round. The
// checks are the scenario's when the run had one (run.json's
// config.script for `up --script`; the file named by the report.json a
// `chaos run` wrote, whose scenario name, actions and coordinator
// downtimes are kept too), else exactly_once alone. v is what verify
// found. It writes nothing.
func RunReport(dir string, v Verify) (*Report, error) {
	var cfg struct {
		Config struct {
			Script string `json:"script"`
		} `json:"config"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no run.json: not a run directory", dir)
		}
		return nil, err
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "run.json"), err)
	}
	var prev *Report
	if pb, err := os.ReadFile(filepath.Join(dir, "report.json")); err == nil {
		var p Report
		if json.Unmarshal(pb, &p) == nil {
			prev = &p
		}
	}
	file := cfg.Config.Script
	if file == "" && prev != nil {
		file = prev.File
	}
	var sc *Scenario
	var notes []string
	if file != "" {
		data, err := os.ReadFile(file)
		if err == nil {
			sc, err = Parse(file, data)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("the run's scenario could not be read again (%v): only exactly_once is checked", err))
			sc = nil
		}
	}
	r, err := BuildReport(dir, sc, v)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		if r.Scenario == "" {
			r.Scenario, r.File = prev.Scenario, prev.File
		}
		r.Actions = prev.Actions
		// The coordinator's deaths are the runner's to know, not the
		// events'.
		if spans := coordSpans(prev.Faults); len(spans) > 0 {
			r.Faults = append(r.Faults, spans...)
			sortFaults(r.Faults)
		}
	}
	if r.Scenario == "" && file != "" {
		r.File = file
	}
	var fin struct {
		Finished *json.RawMessage `json:"finished"`
	}
	if json.Unmarshal(b, &fin) == nil && fin.Finished == nil {
		notes = append(notes, "run.json records no end: the run did not finish (or is still running); this report covers the events written so far")
	}
	r.Notes = append(r.Notes, notes...)
	return r, nil
}

// WriteRunReport builds the report of the run in dir (RunReport) and
// writes report.json and report.html beside it.
func WriteRunReport(dir string, v Verify) (*Report, error) {
	r, err := RunReport(dir, v)
	if err != nil {
		return nil, err
	}
	return r, WriteReport(dir, r)
}
