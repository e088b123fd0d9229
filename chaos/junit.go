package chaos

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// JUnit XML, as CI systems (Jenkins, GitLab, GitHub's test reporters)
// read it: one testsuite per scenario, one testcase per check. A scenario
// that expects to fail has one more testcase, "expect: fail", which fails
// if every check passed; its failed checks are then reported as passing
// test cases with the failure in their output, since failing is what the
// scenario is for. A run that could not be carried out is one testcase,
// "run", with an error.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       float64         `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the result of a scenario run as JUnit XML: r is its
// report (nil if the run did not get that far) and runErr why it stopped.
func WriteJUnit(w io.Writer, sc *Scenario, r *Report, runErr error, elapsed time.Duration) error {
	class := "chaos." + strings.TrimSuffix(filepath.Base(sc.File), filepath.Ext(sc.File))
	suite := junitSuite{Name: sc.Name, Time: elapsed.Seconds()}
	suite.Properties = append(suite.Properties, junitProperty{"file", sc.File}, junitProperty{"expect", sc.Expect})
	add := func(c junitCase) {
		c.ClassName = class
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Error != nil {
			suite.Errors++
		}
	}
	switch {
	case r == nil:
		msg := "the run could not be carried out"
		if runErr != nil {
			msg = runErr.Error()
		}
		add(junitCase{Name: "run", Error: &junitProblem{Message: msg, Type: "not_run", Text: msg}})
	default:
		suite.Timestamp = r.JobStarted.UTC().Format(time.RFC3339)
		suite.Properties = append(suite.Properties, junitProperty{"run", r.Run}, junitProperty{"dir", r.Dir},
			junitProperty{"verdict", r.Verdict}, junitProperty{"ft", r.FT})
		for _, c := range r.Checks {
			tc := junitCase{Name: c.Name, SystemOut: c.Detail}
			switch {
			case c.Pass:
			case sc.Expect == ExpectFail:
				tc.SystemOut = "failed, as the scenario expects: " + c.Detail
			default:
				tc.Failure = &junitProblem{Message: c.Detail, Type: "check", Text: c.Detail}
			}
			add(tc)
		}
		if sc.Expect == ExpectFail {
			tc := junitCase{Name: "expect: fail", SystemOut: "verdict " + r.Verdict}
			if r.Verdict != VerdictFail {
				msg := "every check passed, but the scenario expects a failure"
				tc.Failure = &junitProblem{Message: msg, Type: "expect", Text: msg}
			}
			add(tc)
		}
		if runErr != nil {
			add(junitCase{Name: "report", Error: &junitProblem{Message: runErr.Error(), Type: "not_run", Text: runErr.Error()}})
		}
	}
	all := junitSuites{Name: "spate chaos run", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func writeJUnitFile(path string, sc *Scenario, r *Report, runErr error, elapsed time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJUnit(f, sc, r, runErr, elapsed); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
