"""polyzero.nets"""

# The ways to call a network for inference (`net.inference`, polyzero.nets.compiled);
# here so that the config can validate them without importing torch.
INFERENCE_PATHS = ("auto", "eager", "script", "inductor", "onnx", "fused")
