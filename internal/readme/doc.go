// Package readme holds no code: its test runs every command the README
// shows a user (the lines of its ```sh blocks and its indented command
// lines) as written, with only the overrides that make each tiny (fewer
// steps, a shorter duration, an output directory in a temporary folder),
// and fails when one breaks.
package readme
