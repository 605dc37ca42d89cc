"""Writing the convert step's artifacts: model.cpp, model.bin and model.json."""
