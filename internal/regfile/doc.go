// Package regfile reads the input files of the commands (scenario files,
// and whatever else a flag names) as regular files with a size bound: a
// FIFO, a device such as /dev/zero, a socket or a directory is refused
// without blocking, and so is a file larger than the caller's limit, the
// error naming the path and the limit. It is what the commands pass to
// env.ResolveScenario in place of os.ReadFile.
//
// Package traces keeps its own copy of the check, since it may import no
// project package.
//
// Concurrency: the functions share no state. Determinism: a read is a
// pure function of the file's bytes.
package regfile
