"""The PyTorch trainer process for compaction-rl (docs/torch-trainer.md).

crl keeps the loss, the advantages and the cross-trajectory correction in TypeScript; this
package holds only the model: policy and critic, their AdamW, forward / backward / step over
token sequences, driven over a pipe by `crl train --trainer torch`.
"""

PROTOCOL_VERSION = 1
