"""Writing the convert step's artifacts: model.cpp, model.bin, model.json and model.qdq.onnx."""
