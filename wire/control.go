package wire

import (
	"spate/job"
)

// Hello is the first frame a dialer sends on a new TCP connection.
type Hello struct {
	Token  string `json:"token"`
	Role   string `json:"role"`             // RoleNode (to the coordinator) or RolePeer (node to node)
	Node   string `json:"node,omitempty"`   // the dialer's name ("" when joining: the coordinator assigns one)
	PID    int    `json:"pid,omitempty"`    // the dialer's process id
	Listen string `json:"listen,omitempty"` // where the dialer accepts peer connections
}

// Roles of a Hello.
const (
	RoleNode = "node"
	RolePeer = "peer"
)

// Welcome accepts a Hello.
type Welcome struct {
	Node string `json:"node"` // the name the dialer has in the cluster
	Run  string `json:"run"`  // the run id
}

// Reject refuses a Hello; the connection is closed after it.
type Reject struct {
	Reason string `json:"reason"`
}

// StreamHello opens a data stream from one instance to another.
type StreamHello struct {
	From job.InstanceID `json:"from"`
	To   job.InstanceID `json:"to"`
	Gen  uint64         `json:"gen"` // the sender's placement generation
}

// Control kinds.
const (
	CtlDeploy = "deploy" // coordinator → node: the plan; the node answers CtlReady
	CtlReady  = "ready"  // node → coordinator: instances built, peers connected
	CtlStart  = "start"  // coordinator → node: sources may begin
	CtlDrain  = "drain"  // coordinator → node: sources stop; the job drains
	CtlLost   = "lost"   // coordinator → node: these instances are gone; treat their streams as ended
	CtlDone   = "done"   // node → coordinator: an instance has drained
	CtlEvent  = "event"  // node → coordinator: an event for the run's log
	CtlStop   = "stop"   // coordinator → node: exit
)

// Control is the envelope of every message on the control stream.
type Control struct {
	Kind      string           `json:"kind"`
	Deploy    *Deploy          `json:"deploy,omitempty"`
	Instances []job.InstanceID `json:"instances,omitempty"` // CtlLost
	Done      *Done            `json:"done,omitempty"`
	Event     *Event           `json:"event,omitempty"`
	Error     string           `json:"error,omitempty"` // CtlReady: why the node could not deploy
}

// Deploy is the plan a node runs: the whole job and every instance's place.
type Deploy struct {
	Run       string            `json:"run"`
	DataDir   string            `json:"data_dir"`
	Job       job.Spec          `json:"job"`
	Source    SourceSpec        `json:"source"`
	Instances []Placement       `json:"instances"`
	Nodes     map[string]string `json:"nodes"` // node name → peer listen address
	BatchSize int               `json:"batch_size"`
	FlushMs   int               `json:"flush_ms"`
}

// SourceSpec says how to open the job's input.
type SourceSpec struct {
	Spec    string  `json:"spec"`
	Seed    int64   `json:"seed"`
	Rate    float64 `json:"rate"`
	Keys    int     `json:"keys"`
	Speedup float64 `json:"speedup"`
	Paced   bool    `json:"paced"` // false: as fast as possible
}

// Placement is one operator instance and where it runs.
type Placement struct {
	ID         job.InstanceID `json:"id"`
	Op         string         `json:"op"`
	Index      int            `json:"index"`
	Node       string         `json:"node"`
	Gen        uint64         `json:"gen"`
	Ranges     []job.Range    `json:"ranges,omitempty"`     // keyed operators: key groups owned
	Partitions []int          `json:"partitions,omitempty"` // sources: partitions read
}

// Done reports a drained instance.
type Done struct {
	Instance  job.InstanceID `json:"instance"`
	Positions map[int]uint64 `json:"positions,omitempty"` // sources: partition → records read
	In        uint64         `json:"in"`
	Out       uint64         `json:"out"`
	Late      uint64         `json:"late,omitempty"`
}

// Event is a node's event; the coordinator stamps and logs it.
type Event struct {
	Kind     string         `json:"kind"`
	Instance job.InstanceID `json:"instance,omitempty"`
	Text     string         `json:"text"`
	Fields   map[string]any `json:"fields,omitempty"`
}

// Heartbeat is sent by a node on its control stream every heartbeat period.
type Heartbeat struct {
	Node      string          `json:"node"`
	Instances []InstanceStats `json:"instances"`
}

// InstanceStats are an instance's counters since it started.
type InstanceStats struct {
	ID        job.InstanceID `json:"id"`
	In        uint64         `json:"in"`  // records processed (sources: read)
	Out       uint64         `json:"out"` // records emitted
	Watermark int64          `json:"wm"`
	Backlog   int            `json:"backlog"` // queued input messages
	Positions map[int]uint64 `json:"positions,omitempty"`
}
