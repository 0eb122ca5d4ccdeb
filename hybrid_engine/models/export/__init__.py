"""Model preparation (the ``export`` extra): PyTorch to checked, fused, int8-quantized ONNX.

``common`` holds the steps every kind shares; one module per model kind uses them.
"""
