// Command train trains a PPO policy (package ppo) on the streamscale
// simulator or, as a known-answer check, on CartPole-v1:
//
//	go run ./train -env cartpole -steps 100000 -seed 1 -json
//	go run ./train -env streamscale -profile pred -seed 284572 -out runs/pred
//	go run ./train -config configs/residual.toml -profile etl -out runs/default/etl
//	go run ./train -config configs/residual.toml -seeds 1-5 -out runs/default-seeds
//
// -config reads a recipe file (TOML; keys are the flag names, per-profile
// tables [profiles.pred] and [profiles.etl]; configs/README.md): flags on
// the command line win, and summary.json and the policy card record the
// resolved recipe and the file's path and SHA-256. configs/ holds the
// recipe of every committed policy set.
//
// -scenario picks the simulator's physics preset (env.Scenarios; default
// realistic) for the training and the development environments alike; it
// is recorded in summary.json and on the policy card.
// It writes into -out: policy.safetensors and policy.json (the selected
// policy and its card), progress.csv and progress.parquet (one row per
// iteration, SB3's metric names), learning_curve.png (return, explained
// variance and entropy over env steps), checkpoint.ckpt (rewritten after
// every iteration; -resume continues from it bit for bit) and
// summary.json (printed with -json). An -out that already holds a policy
// is refused unless -force (or -resume) is given. A progress line per
// iteration (env steps, fps, mean return, explained variance against the
// λ-returns and the Monte-Carlo returns, entropy share, ETA) goes to
// stderr when it is a terminal and -json is not given, or with -progress.
//
// -seeds 1,2,3 (or 1-5) trains the recipe once per seed, each into
// <out>/seed-<n>/ with the bytes -seed n would write, at most GOMAXPROCS
// seeds at once with each seed's goroutines reduced to its share, and
// writes <out>/seeds.json (every seed's final figures and their IQM).
//
// Flags are checked, and -out is created and probed for writing, before
// any training starts; errors exit with status 1 (2 for bad flags or a bad
// recipe, with one line naming the flag or key). Flags are parsed in
// train/cli; the wiring lives in train/run and the progress files in
// train/progress.
package main
