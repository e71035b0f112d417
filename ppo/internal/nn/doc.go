// Package nn is what ppo's training graph and ppo/policy's plain-Go
// inference share, so that both evaluate the actor-critic with the same
// arithmetic: the parameter layout (Arch, Param) and the element kernels
// (LogSoftmaxRows, ElemApply, BiasApply), with the trainer's element-wise
// gradient and optimiser kernels (Add, Mul, TanhGrad, Adam).
//
// Where the CPU has them (golang.org/x/sys/cpu, checked at start-up)
// tanh, Add, Mul, TanhGrad and Adam run in small assembly loops over
// independent lanes that perform the Go loops' float operations in the
// same order, each rounded on its own, so their bits equal the Go loops'
// (the *AssemblyMatchesGo tests); ExpSlice, which the float32
// log-softmax uses, performs math.Exp's own operations (its AVX+FMA path
// on amd64) eight lanes at a time, so its bits equal math.Exp's
// (TestExpSliceMatchesMathExp). The purego build tag selects the Go loops
// everywhere.
//
// Layout: all parameters live in one flat float32 vector, actor first,
// each weight stored input-major ([in, out], so a batch is X·W) and each
// bias as [1, out]; artifacts store PyTorch's layout ([out, in] and
// [out]). The kernels write into caller buffers, compute in float64 where
// noted, and visit elements in index order: they are deterministic and,
// holding no state, safe for concurrent use on disjoint buffers.
package nn
