"""Like upstream's processor of the same name, this module imports torchcodec at the top.

SGLang imports every multimodal processor at start-up for a multimodal architecture, so a host
without a loadable FFmpeg hits torchcodec's real `Could not load libtorchcodec` error here.
"""

from torchcodec.decoders import AudioDecoder

SUPPORTED_AUDIO_DECODER = AudioDecoder
