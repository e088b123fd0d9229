package chaos

import (
	"testing"
	"time"
)

func TestAllRecoveredCountsItsRecoveriesInGoodEnglish(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "no recovery was needed"},
		{1, "1 recovery, finished"},
		{3, "3 recoveries, every one finished"},
	} {
		ev := Evidence{Recoveries: make([]time.Duration, tc.n)}
		got := Evaluate([]Check{{Name: CheckAllRecovered}}, ev)
		if len(got) != 1 || !got[0].Pass || got[0].Detail != tc.want {
			t.Errorf("%d recoveries: %+v, want a pass saying %q", tc.n, got, tc.want)
		}
	}
}
