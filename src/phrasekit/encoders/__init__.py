"""Encoders: every one maps a list of strings to L2-normalised float32 vectors (n, d).

The classes are imported on first use: the transformer encoders need torch, which code that
only reads cached vectors should not have to load.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__, submod_attrs={"base": ["Encoder", "check_gpu_request", "resolve_device",
                                     "validate_texts"],
                            "external": ["ExternalEncoder", "load_sentence_transformers_folder"],
                            "export": ["export_sentence_transformers"],
                            "facets.encoder": ["FacetEncoder"],
                            "pearl": ["PearlEncoder"],
                            "phrase_bert": ["load_phrase_bert"],
                            "span": ["SpanEncoder"],
                            "static": ["StaticWordEncoder"],
                            "string": ["CharNgramEncoder"],
                            "subtst": ["SubTST"],
                            "transformer": ["TransformerEncoder", "bf16_weighs_int8",
                                            "resolve_precision"]})
