// Package wire is spate's frame codec: the bytes on every link, between the
// coordinator and the nodes and between nodes. SPEC.md, beside this file,
// is the normative description; this package implements it.
//
// A frame is a 4-byte big-endian length N, a type byte, and N-1 bytes of
// payload. Writer writes frames through a buffer (call Flush); Reader reads
// them one at a time, never past the end of the frame it returns, so a
// connection can be handed to yamux right after the handshake frames.
// Payloads are JSON (the handshake and control messages, whose structs are
// in control.go; see DecodeJSON) or binary (batches of records, watermarks,
// end of stream).
//
// The handshake (SPEC.md, "Connection handshake") is in session.go and
// join.go. A node joins the coordinator with JoinClient and JoinServer: a
// challenge whose proofs (package pki) show that both ends know the token
// without sending it, and that vouch for the coordinator's TLS decision
// and CA. Peers greet each other with ClientHandshake and
// ServerHandshake, with the token in clear, or, inside TLS (TLSClient,
// TLSServer), with the certificates the join gave them. Remote says
// whether an address is off this machine, which is what turns TLS on.
//
// The batch is the hot path. BatchBuilder gathers records into runs of one
// (producer, destination key group) with consecutive sequence numbers, and
// encodes them; DecodeBatch walks a payload and hands each record to a
// callback, its key and data aliasing the payload. Neither allocates in
// steady state.
//
// Contract:
//
//   - Decoders never panic and never trust a length: a frame length above
//     the reader's maximum is refused before anything is allocated, a
//     Reader's buffer grows only with bytes actually received, and a batch
//     count that the remaining bytes cannot hold is refused before looping.
//   - Every decoding error wraps one of the sentinel errors of errors.go
//     and names the place: the frame type, and in a batch the run, record,
//     field and byte offset. A receiver closes the one connection (or
//     stream) that sent a bad frame and reports it; it never crashes.
//   - After an error a Reader is done: every later call returns the same
//     error.
//   - Writer refuses to send what Reader would refuse (an unknown type, an
//     oversized frame, an end frame with a payload).
//   - Records of one (producer, key group) keep their order through
//     BatchBuilder and DecodeBatch; records of different pairs may be
//     reordered within a batch.
//   - Payload slices returned by Reader.ReadFrame are valid until the next
//     ReadFrame; record slices passed by DecodeBatch alias the payload.
//
// Writer, Reader and BatchBuilder are not safe for concurrent use; the
// functions are.
package wire
