"""The replayed Signet daemon: context, candidates, features, labels, feedback, ranking,
comparison, predictor state, the session lifecycle, its trainer strategies and the simulator
that runs it on a synthetic store."""
