"""The options of the `train` commands, generated from the training configs.

Per config: a help text per field, the fields that are no options (set by the command itself,
or internal knobs) and the option names that differ from the field names. Defaults are those of
the config dataclasses (or the builder functions' keyword defaults).

Only the light modules that hold the configs (and the data builders, which import torch,
scikit-learn and spaCy where they use them) are imported here, so that `phrasekit train
--help` and each `train <method> --help` load none of them.
"""

from __future__ import annotations

from phrasekit.cli.options import ConfigOptions
from phrasekit.encoders.subtst_config import SubTSTConfig
from phrasekit.training.facets.config import FacetTrainingConfig
from phrasekit.training.facets.data import FacetDataConfig
from phrasekit.training.pearl.config import PearlTrainingConfig
from phrasekit.training.phrase_bert.config import PhraseBertTrainingConfig
from phrasekit.training.phrase_bert.data import build_phrase_bert_dataset
from phrasekit.training.subtst.config import SubTSTTrainingConfig
from phrasekit.training.uctopic.config import UCTopicConfig
from phrasekit.training.uctopic.data import build_uctopic_dataset

THREADS = "torch threads."
MAX_MINUTES = "Stop (and checkpoint) after this many minutes."
MAX_STEPS = "Stop after this many steps."
CLIFF_GUARD = ("alpha below this fraction of the smallest alpha at which CoNLL or BC5CDR dev NMI "
               "halves (the dev 'cliff'); 0 = off")

PEARL = ConfigOptions(
    PearlTrainingConfig,
    help={
        "backbone": "Packaged backbone: minilm (22M, the shipped model's) or mpnet (110M; "
                    "needs phrasekit\\[mpnet]; train it with --adapter-rank).",
        "adapter_rank": "Train low-rank adapters of this rank on a frozen backbone (LoRA; "
                        "the model folder stores the changes as low-rank factors); 0 = train "
                        "the backbone's weights themselves.",
        "seed": "Random seed of the initial weights (char CNN, projection, type heads).",
        "data_seed": "Seed of the batch order, augmentation and dropout only (the default "
                     "gives the shipped model): runs that share --seed start from the same "
                     "weights and can be averaged (`train soup`).",
        "batch_size": "Anchors per step.",
        "hard_negatives": "Mined hard negatives per anchor.",
        "memory_size": "Cross-batch memory: the last N candidate embeddings serve as extra "
                       "negatives (0 = off).",
        "type_weight": "Weight of the type loss next to InfoNCE.",
        "lr": "Backbone learning rate (Adam).",
        "lr_char": "Char CNN learning rate (default: that of the new modules).",
        "char_pretrain_steps": "LOVE-style pre-training steps of the char CNN (mimic the "
                               "backbone) before fine-tuning; 0 = off.",
        "type_head_on": "What the type head reads: output (the final embedding, so the type "
                        "loss shapes the space users search; the shipped model) or features "
                        "(the phrase and char feature vectors).",
        "preserve_weight": "Weight of a term keeping in-batch cosines near the initial model's; "
                           "0 = off.",
        "length_weight": "Weight of a term charging for length information beyond the initial "
                         "model's (keeps entity clusters from splitting by length); 0 = off.",
        "supersense_weight": "Weight of a second auxiliary head predicting the WordNet noun "
                             "supersense of a noun phrase's head (noun.substance, noun.state, "
                             "noun.person, ...) from the output embedding; needs data/wordnet; "
                             "0 = off.",
        "teachers": "Comma-separated distillation teachers (model names, e.g. mpnet,minilm): "
                    "the student matches their averaged in-batch cosine structure on a "
                    "transfer set of phrases and (entity name, variant) pairs.",
        "distill_weight": "Weight of the teacher distillation term; 0 = off.",
        "distill_batch": "Transfer-set texts per step (half of them name/variant pairs).",
        "distill_phrases": "Training phrases sampled into the transfer set.",
        "distill_names": "(Entity name, rule-made variant) pairs in the transfer set.",
        "alias_file": "Real-alias file (`train pearl-data --redirects`); default: "
                   "DATA/aliases.tsv.gz when present.",
        "alias_dev": "Score top-1 alias retrieval on the alias dev split in the dev selection "
                     "(when the alias file exists).",
        "related_dev": "Score entity relatedness (`train pearl-data --related-corpus`) in the "
                       "dev selection when related.tsv.gz sits beside the alias file.",
        "alias_weight": "Weight of InfoNCE over train-split alias -> canonical pairs; 0 = off.",
        "alias_batch": "Alias pairs per step.",
        "alias_negatives": "Hard negatives per alias pair: canonicals sharing the first token.",
        "alias_kinds": "Comma-separated alias kinds to train on (surface, partial, "
                       "abbreviation, different; default: all).",
        "precision": "fp32, or bf16 for forward passes under bfloat16 autocast (master "
                     "weights stay fp32; fast only on CPUs with AVX512-BF16 / AMX).",
        "device": "cpu, or cuda / cuda:N to train on a GPU (the saved model runs anywhere).",
        "max_steps": "Training steps (the default trains the shipped model).",
        "max_minutes": MAX_MINUTES,
        "train_layers": "Train only the top N transformer layers (default: all); the lower "
                        "layers and the embeddings stay the backbone's.",
        "use_char": "Use the character CNN.",
        "use_type": "Phrase-type classification loss.",
        "char_aug": "Character-level augmentation.",
        "token_aug": "Token-level augmentation.",
        "phrase_aug": "Phrase-level (paraphrase) augmentation.",
        "alphas": "Comma-separated averaging coefficients tried on dev.",
        "alpha": "Fixed weight-averaging coefficient of the backbone (default: chosen on dev "
                 "splits).",
        "alpha_proj": "Fixed averaging coefficient of the projection, i.e. the char path "
                      "(default: chosen on dev jointly with --alpha; tied to a fixed --alpha).",
        "cliff_margin": f"Choose {CLIFF_GUARD}.",
        "num_threads": THREADS,
    },
    exclude={"temperature", "lr_new", "lr_proj", "wordnet_dir", "decay_every",
             "decay_rate", "checkpoint_every", "max_seq_length", "freeze_embeddings",
             "proj_alphas", "dev_data_dir", "show_progress", "limit_phrases",
             "distill_temperature"},
    rename={"use_char": "--char-encoder", "use_type": "--type-loss",
            "cliff_margin": "--cliff-guard", "num_threads": "--threads"},
)

PHRASE_BERT = ConfigOptions(
    PhraseBertTrainingConfig,
    help={
        "seed": "Random seed.",
        "batch_size": "Triplets per step.",
        "lr": "Adam learning rate (linear warm-up, then linear decay).",
        "margin": "Triplet-loss margin.",
        "normalize": "Compute the triplet loss on unit vectors (default: on the raw "
                     "mean-pooled vectors).",
        "use_paraphrase": "Train on the paraphrase triplets (--no-paraphrase: context triplets "
                          "only, the Phrase-BERT-context ablation).",
        "use_context": "Train on the context triplets (--no-context: paraphrase triplets only, "
                       "the Phrase-BERT-phrase ablation).",
        "max_paraphrase": "Use the first N paraphrase triplets (default: all).",
        "max_context": "Use the first N context triplets (default: all).",
        "max_steps": "Stop after this many steps (the schedule stays that of the whole epoch).",
        "max_minutes": MAX_MINUTES,
        "checkpoint_every": "Steps between checkpoints.",
        "alpha": "Fixed weight-averaging coefficient with the packaged MiniLM (1.0: the plain "
                 "fine-tuned weights, no averaging; default: chosen on dev splits).",
        "num_threads": THREADS,
    },
    exclude={"backbone", "warmup", "epochs", "source_repeat", "phrase_tokens", "context_tokens",
             "freeze_embeddings", "alphas", "dev_data_dir", "show_progress"},
    rename={"use_paraphrase": "--paraphrase", "use_context": "--context",
            "num_threads": "--threads"},
    named={"source_repeat": "--repeat-source"},
)

PHRASE_BERT_DATA = ConfigOptions(
    build_phrase_bert_dataset,
    help={
        "max_paraphrase": "Paraphrase triplets kept (PPDB train + WordNet; 0: none).",
        "max_context": "Phrase-in-context triplets kept, most frequent phrases first (0: none).",
        "max_words": "Corpus words sampled for the contexts (spaCy pass).",
        "context_tokens": "WordPiece tokens per context window (mask included).",
        "drop_binomials": "Leave out WordNet's Latin binomials ('Ursus horribilis'), ~45% of "
                          "its triplets.",
        "labelled_ppdb": "Also make triplets from the judged pairs of the PPDB train splits (a "
                         "labelled paraphrase as p+, a labelled non-paraphrase as p-; sources "
                         "ppdb:labelled, ppdb_filtered:labelled).",
        "seed": "Random seed (sampling, negatives, order).",
    },
    exclude={"shared_dir", "corpora", "phrase_vocabs", "paraphrase_sources",
             "max_pairs_per_synset", "benchmark_dir", "strict_filter", "show_progress"},
)

SUBTST_MODEL = ConfigOptions(
    SubTSTConfig,
    help={
        "n_topics": "Sub-word LDA topics k; 0 trains the SBERT-style baseline without topics.",
        "topic_trainable": "Fine-tune the topic table or keep the LDA's.",
        "pooling": "mean or max pooling.",
        "trainable_layers": "Top backbone layers fine-tuned (0: backbone frozen, features "
                            "cached).",
    },
    exclude={"backbone", "kind", "num_labels", "dropout", "max_seq_length", "topic_scale",
             "score_scale"},
    rename={"n_topics": "--topics", "topic_trainable": "--train-topics/--freeze-topics"},
)

SUBTST_TRAINING = ConfigOptions(
    SubTSTTrainingConfig,
    help={
        "epochs": "Epochs; the best on dev is kept.",
        "batch_size": "Pairs per step.",
        "lr": "AdamW learning rate of the transfer layer, topics and head.",
        "seed": "Random seed (training order, initialisation, LDA).",
    },
    exclude={"layer_lr", "weight_decay", "warmup", "lda_max_iter"},
)

FACETS_DATA = ConfigOptions(
    FacetDataConfig,
    help={
        "granularity": "`phrase` (noun phrases -> the words around them) or `sentence` (-> "
                       "words of the previous and next sentence).",
        "max_docs": "At most this many documents per corpus.",
        "seed": "Random seed (sub-sampling, validation split).",
    },
    exclude={"corpora", "corpora_dir", "phrase_cache_dirs", "word_space", "window",
             "max_targets", "min_targets", "min_tokens", "max_tokens", "max_per_phrase",
             "val_fraction", "exclude_eval_sentences", "show_progress"},
)

FACETS = ConfigOptions(
    FacetTrainingConfig,
    help={
        "n_facets": "Number of facets K: codebook vectors predicted per text (shipped models: "
                    "1, 3, 10).",
        "max_minutes": "Wall-clock budget; rerunning resumes from the checkpoint.",
        "max_steps": MAX_STEPS,
        "batch_size": "Examples per step.",
        "lr": "AdamW learning rate.",
        "dropout": "Dropout in the transformer layers.",
        "num_threads": THREADS,
        "seed": "Random seed.",
    },
    exclude={"hidden_dim", "n_heads", "encoder_layers", "decoder_layers", "ff_dim",
             "cross_attention", "max_len", "weight_decay", "warmup_steps", "decay_steps", "lam",
             "coeff_steps", "coeff_method", "length_buckets", "checkpoint_every",
             "val_examples", "show_progress"},
    rename={"n_facets": "-k", "max_minutes": "--minutes", "num_threads": "--threads"},
)

UCTOPIC_DATA = ConfigOptions(
    build_uctopic_dataset,
    help={
        "max_words": "Words of text sampled from the corpora (spaCy time grows with it).",
        "seed": "Random seed (sampling).",
    },
    exclude={"corpora", "shared_dir", "max_sentence_words", "max_instances_per_mention",
             "max_pairs_per_mention", "spacy_model", "show_progress"},
)

UCTOPIC = ConfigOptions(
    UCTopicConfig,
    help={
        "batch_size": "Pairs per step (in-batch negatives).",
        "lr": "AdamW learning rate.",
        "max_minutes": "Training-time budget, counted across resumes.",
        "max_steps": MAX_STEPS,
        "max_length": "Tokens per sentence (centred on the mention).",
        "keep_prob": "Probability that the positive keeps its mention unmasked.",
        "temperature": "InfoNCE temperature.",
        "num_threads": THREADS,
        "seed": "Random seed.",
    },
    exclude={"backbone", "weight_decay", "warmup_steps", "max_pairs", "freeze_embeddings",
             "checkpoint_every", "log_every", "show_progress"},
    rename={"max_minutes": "--minutes", "num_threads": "--threads"},
)

#: Every generated group (the tests check that each option has a help text).
ALL = (PEARL, PHRASE_BERT, PHRASE_BERT_DATA, SUBTST_MODEL, SUBTST_TRAINING, FACETS_DATA, FACETS,
       UCTOPIC_DATA, UCTOPIC)
