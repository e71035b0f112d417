// Package ckptstore keeps a planner's complete checkpoints in a directory
// so that a planner restarted after its own death (`serve planner
// -restore DIR`) resumes the job from the latest one: Flink's JobManager
// failover, without the standby (see package planner, "Planner restart",
// and docs/runtime.md).
//
// A checkpoint file holds one complete checkpoint: its ID, the source
// offset it covers (the cut: inputs 0..Cut−1 of the replayable load,
// each applied once, none later), the job it belongs to (Job: the
// application, seed and load; a restore refuses another job's file), the
// operator count and the keyed state of every non-empty key group. The
// format (format.go) is framed by a magic and version, a body length and a
// CRC-32C (Castagnoli) of everything before it, so that a truncated,
// corrupt or foreign file is refused with an error naming the file and
// what is wrong, never a panic. Its encoding is canonical — key groups and
// keys ascending, no empty group — so the bytes are a function of the
// checkpoint alone: no map order and no clock reach them, and Decode ∘
// Encode is the identity (the fuzz test checks it).
//
// A Store writes each file atomically (a temporary file in the same
// directory, fsync, rename over the final name, fsync of the directory):
// a reader sees a complete earlier file or a complete new one, never a
// partial one; a crash mid-write leaves only a temporary file, which Open
// removes. It keeps the last Keep files by checkpoint ID and removes
// older ones after each save. Files are named ckpt-<ID, 20 digits>.ssck,
// so that the name order is the ID order; the name's ID must equal the
// file's.
//
// Reading a file (Load, Latest) opens it as a regular file with the size
// bound MaxFile (internal/regfile), then verifies the length, checksum
// and structure. Latest reads the newest file only: when it is refused
// the error says so and names the previous one, for an operator to remove
// the bad file deliberately rather than have a restore fall back
// silently.
//
// Concurrency: a Store is used by one goroutine at a time (the planner's
// writer); the package functions share no state. Determinism: Encode is a
// pure function of its Checkpoint; which files exist depends on when the
// planner died.
package ckptstore
