"""The replayed Signet daemon: context, candidates, features, labels, feedback, ranking, comparison, predictor state and the session loop."""
