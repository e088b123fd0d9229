package sim

import (
	"context"
	"errors"
	"flag"
	"io"
)

// exactHost does not exist in the guest itself: a guest runs natively.
type exactHost struct{}

func newExactHost(context.Context, *flag.FlagSet, io.Writer, bool) (*exactHost, error) {
	return nil, errors.New("the exact mode's guest cannot host a guest: pass --native")
}

func (*exactHost) close(context.Context) {}

func (*exactHost) run(context.Context, uint64, Config, string) Result { return Result{} }

func (*exactHost) runFile(context.Context, ScheduleFile, Config, string, string) Result {
	return Result{}
}

func (*exactHost) replay(context.Context, uint64, Config, string, bool, bool, io.Writer) int {
	return 2
}
