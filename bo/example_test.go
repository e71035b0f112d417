package bo_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"streamscale/bo"
)

// Example minimizes the Branin function with the ask/tell loop. The second
// dimension is quantized to steps of 0.25.
func Example() {
	dims := []bo.Dim{{Low: -5, High: 10}, {Low: 0, High: 15, Step: 0.25}}
	o, err := bo.New(dims, bo.DefaultConfig(), rand.NewPCG(1, 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 30 {
		x, err := o.Suggest()
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := o.Observe(x, bo.Branin(x)); err != nil {
			fmt.Println(err)
			return
		}
	}
	x, y, _ := o.Best()
	fmt.Printf("%d evaluations, best f(%.2f, %.2f) = %.3f\n", o.Len(), x[0], x[1], y)
	// Output:
	// 30 evaluations, best f(3.15, 2.25) = 0.399
}

// ExampleGP fits a GP to three points and predicts between them.
func ExampleGP() {
	g := bo.NewGP(1, 1e-4)
	x := mat.NewDense(3, 1, []float64{0, 0.5, 1})
	if err := g.Fit(x, []float64{1, 0, 1}); err != nil {
		fmt.Println(err)
		return
	}
	mean, std := g.Predict([]float64{0.25})
	fmt.Printf("f(0.25) = %.3f ± %.3f\n", mean, std)
	// Output:
	// f(0.25) = 0.331 ± 0.041
}
