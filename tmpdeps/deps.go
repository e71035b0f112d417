package tmpdeps

import (
	_ "github.com/gin-gonic/gin"
	_ "github.com/parquet-go/parquet-go"
	_ "golang.org/x/sync/errgroup"
	_ "gonum.org/v1/gonum/mat"
	_ "gonum.org/v1/plot"
	_ "gorgonia.org/gorgonia"
	_ "gorgonia.org/tensor"
)
