"""The job runtime: a job's skeleton, the command line's verbs, worker pools, progress,
signals, run locks, device choice, model files and what a run says as it starts and ends."""
