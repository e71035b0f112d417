//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// kernels lists the kernel levels this CPU runs, slowest first.
func kernels() []string {
	k := []string{"go"}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		k = append(k, "avx2")
		if cpu.X86.HasAVX512F {
			k = append(k, "avx512")
		}
	}
	return k
}

// setKernel selects a level from kernels and returns a function that
// restores the previous one.
func setKernel(name string) (restore func()) {
	a, z := Assembly, avx512
	Assembly, avx512 = name != "go", name == "avx512"
	return func() { Assembly, avx512 = a, z }
}
