package tmpdeps
import ("testing"; G "gorgonia.org/gorgonia"; "gorgonia.org/tensor")
func TestG(t *testing.T){
 g:=G.NewGraph()
 x:=G.NewMatrix(g,tensor.Float64,G.WithShape(2,2),G.WithName("x"),G.WithValue(tensor.New(tensor.WithShape(2,2),tensor.WithBacking([]float64{1,2,3,4}))))
 y:=G.Must(G.Sum(G.Must(G.Tanh(x))))
 G.Grad(y,x)
 m:=G.NewTapeMachine(g); if err:=m.RunAll();err!=nil{t.Fatal(err)}
 t.Log(y.Value())
}
