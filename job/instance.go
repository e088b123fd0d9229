package job

import (
	"fmt"
	"strconv"
	"strings"
)

// InstanceID names one operator instance: "OP#INDEX", e.g. "count#1".
type InstanceID string

// MakeInstanceID returns the ID of instance index of operator op.
func MakeInstanceID(op string, index int) InstanceID {
	return InstanceID(op + "#" + strconv.Itoa(index))
}

func (id InstanceID) String() string { return string(id) }

// Split returns the operator name and instance index of id.
func (id InstanceID) Split() (op string, index int, err error) {
	op, n, ok := strings.Cut(string(id), "#")
	if !ok {
		return "", 0, fmt.Errorf("instance id %q: want OP#INDEX", string(id))
	}
	index, err = strconv.Atoi(n)
	if err != nil || index < 0 {
		return "", 0, fmt.Errorf("instance id %q: bad index", string(id))
	}
	return op, index, nil
}
