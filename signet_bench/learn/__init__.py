"""Learning: training samples, the scorer, training and its gates, ONNX export, pairs and the base model."""
