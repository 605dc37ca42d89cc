"""The data files the steps read and write besides the model itself: sample sets (.npz, one key per
input, arr[i] one sample) for calibration, reference and test; qnn-net-run input lists and raw
tensors. Formats only: nothing here builds or runs a model.

    npz          deterministic .npz writing, row-by-row reading, test data samples
    samples      calibration samples streamed from an .npz or an input list
    input_list   qnn-net-run input lists and raw files
    model_io     IOInfo, NodeInfo: a loaded model's inputs, outputs and schedule, on any backend
    json_file    a JSON object from a file the user names, its problems as one line
    dtypes       the runtime's dtype codes as numpy dtypes and qnnb.h names
"""
