package breaks

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNothingIsBrokenByDefault(t *testing.T) {
	var s Set
	for _, in := range List() {
		if s.Has(in.Break) {
			t.Errorf("the zero Set has %s", in.Name)
		}
	}
	if !s.Empty() || s.String() != "" || s.Banner() != "" {
		t.Errorf("the zero Set: empty %v, %q, %q", s.Empty(), s.String(), s.Banner())
	}
	if p, err := Parse(""); err != nil || !p.Empty() {
		t.Errorf(`Parse(""): %v, %v`, p, err)
	}
}

func TestEveryNameParsesToItsOwnVariant(t *testing.T) {
	want := []string{"trim-newest", "accept-fenced", "early-commit", "replay-late", "stale-slice"}
	list := List()
	if len(list) != len(want) {
		t.Fatalf("%d variants, want %d", len(list), len(want))
	}
	for i, in := range list {
		if in.Name != want[i] || in.Break.String() != in.Name || in.Desc == "" || strings.Contains(in.Desc, "\n") {
			t.Errorf("variant %d: %+v", i, in)
		}
		s, err := Parse(in.Name)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in.Name, err)
		}
		for _, other := range list {
			if s.Has(other.Break) != (other.Break == in.Break) {
				t.Errorf("Parse(%q).Has(%s) = %v", in.Name, other.Name, s.Has(other.Break))
			}
		}
		if s.String() != in.Name || s.Banner() != "BROKEN ON PURPOSE: "+in.Name {
			t.Errorf("Parse(%q): %q, %q", in.Name, s.String(), s.Banner())
		}
		if !strings.Contains(Help(), in.Name+" ") {
			t.Errorf("Help() lacks %s", in.Name)
		}
	}
}

func TestAnUnknownNameIsOneLineNamingTheFlag(t *testing.T) {
	_, err := Parse("trim-newest,trim-oldest")
	if err == nil {
		t.Fatal("trim-oldest parsed")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "--break: ") || !strings.Contains(msg, `"trim-oldest"`) || !strings.Contains(msg, Names()) || strings.Contains(msg, "\n") {
		t.Errorf("error: %q", msg)
	}
}

func TestASetTravelsAsItsNames(t *testing.T) {
	type doc struct {
		Break Set `json:"break,omitempty"`
	}
	b, err := json.Marshal(doc{Break: Of(TrimNewest, StaleSlice)})
	if err != nil || string(b) != `{"break":"trim-newest,stale-slice"}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil || d.Break != Of(TrimNewest, StaleSlice) {
		t.Fatalf("unmarshal: %v, %v", d.Break, err)
	}
	if b, _ := json.Marshal(doc{}); string(b) != `{}` {
		t.Errorf("the zero Set marshals as %s", b)
	}
	if err := json.Unmarshal([]byte(`{"break":"nope"}`), &d); err == nil {
		t.Error("an unknown name unmarshalled")
	}
}
