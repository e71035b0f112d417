// Package progress writes the train command's per-iteration log: the
// rows ppo.Trainer reports (ppo.Stats, SB3's metric names) as
// progress.csv (CSVLogger, one flushed row per iteration), as
// progress.parquet (ParquetLogger, written whole on Close; ReadParquet
// reads it back when a run resumes) and as a progress line per iteration
// (Line); WriteCurve draws the learning curve (learning_curve.png).
//
// Units are those of ppo.Stats (rewards per environment step, env steps,
// env steps per wall second for time/fps). Values are written as given,
// in ppo.MetricNames order, NaN as an empty CSV cell; nothing here reads
// the clock or draws random numbers. A logger is not safe for concurrent
// use.
package progress
