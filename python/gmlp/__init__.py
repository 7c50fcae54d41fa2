"""gmlp's PyTorch twin: the encoders of gmlp (C++/LibTorch) in plain PyTorch, loading what
`gmlp export` writes under gmlp's own tensor names.

    import gmlp
    model = gmlp.load("export_dir")          # MlmModel or SequenceClassifier, eval mode
    out = model(input_ids, token_type_ids, attention_mask)
    out.logits, out.hidden_states
"""

from .config import EncoderConfig
from .encoder import ARCH_TABLE, Encoder
from .heads import MlmModel, ModelOutput, SequenceClassifier
from .load import build_model, check_tensors, load, read_export
from .tokenizer import Tokenizer

__all__ = [
    "ARCH_TABLE", "Encoder", "EncoderConfig", "MlmModel", "ModelOutput", "SequenceClassifier",
    "Tokenizer", "build_model", "check_tensors", "load", "read_export",
]
__version__ = "0.1.0"
