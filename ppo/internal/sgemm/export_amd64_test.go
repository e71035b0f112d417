package sgemm

func setAssembly(on bool) { Assembly = on }
