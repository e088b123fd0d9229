package human

import (
	"testing"
	"time"
)

func TestNumbersReadAsAPersonWritesThem(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(0), "0"},
		{Count(950), "950"},
		{Count(999.6), "1k"},
		{Count(11832), "11.8k"},
		{Count(62160), "62.2k"},
		{Count(2_345_678), "2.35M"},
		{Count(3.2e9), "3.2G"},
		{Count(0.25), "0.25"},
		{Count(-1500), "-1.5k"},
		{Rate(11830), "11.8k/s"},
		{Duration(157 * time.Microsecond), "157 µs"},
		{Duration(8962 * time.Microsecond), "9.0 ms"},
		{Duration(2100 * time.Millisecond), "2.1 s"},
		{Duration(185 * time.Second), "3m05s"},
		{Duration(500 * time.Nanosecond), "500 ns"},
		{Seconds(0.883), "883 ms"},
		{Bytes(1.5 * (1 << 20)), "1.5 MiB"},
		{Plural(1, "instance"), "1 instance"},
		{Plural(2, "instance"), "2 instances"},
		{Plural(0, "fault"), "0 faults"},
		{Plural(3, "key group"), "3 key groups"},
		{Plural(2, "recovery"), "2 recoveries"},
		{Plural(2, "pass"), "2 passes"},
		{PluralCount(27000, "record"), "27k records"},
		{EventTime(12300), "12.3 s"},
		{EventTime(807257366000), "1995-08-01 06:09:26"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
