// Package wire is the runtime's binary protocol between the planner and the
// workers and between workers: length-prefixed frames, little-endian.
//
// A frame is a 4-byte body length n (1 ≤ n ≤ MaxFrame) followed by the
// body: one kind byte and the kind's payload. Every message type has an
// Append method that appends its whole frame to a buffer, and a Decode
// function that parses a payload. Decoders return an error naming what was
// wrong for any malformed payload (truncated, oversized, trailing bytes,
// out-of-range fields); they never panic and never allocate more than a
// small multiple of the payload's own size. Byte slices in decoded messages
// (record payloads, state values) alias the payload buffer: copy them to
// keep them past the next ReadFrame.
//
// The package does no I/O beyond ReadFrame/WriteFrame on the io.Reader and
// io.Writer it is given, holds no state and is safe for concurrent use.
package wire
