// Command train trains a PPO policy (package ppo) on the streamscale
// simulator or, as a known-answer check, on CartPole-v1:
//
//	go run ./train -env cartpole -steps 100000 -seed 1 -json
//	go run ./train -env streamscale -profile pred -seed 284572 -out runs/pred
//
// -scenario picks the simulator's physics preset (env.Scenarios; default
// realistic) for the training and the development environments alike; it
// is recorded in summary.json and on the policy card.
// It writes into -out: policy.safetensors and policy.json (the selected
// policy and its card), progress.csv and progress.parquet (one row per
// iteration, SB3's metric names), checkpoint.ckpt (rewritten after every
// iteration; -resume continues from it bit for bit) and summary.json
// (printed with -json). A progress bar is drawn on stderr when it is a
// terminal. Flags are checked, and -out is created and probed for
// writing, before any training starts; errors exit with status 1 (2 for
// bad flags, with one line naming the flag). Flags are parsed in
// train/cli; the wiring lives in train/run and the progress files in
// train/progress.
package main
