"""UCTopic foundation: span pooling (modes, masking, offsets, truncation, errors, save/load),
entity-clustering loaders and metrics, pair mining, and pre-training (steps, bit-exact resume,
time budget). Real packaged MiniLM on tiny inputs. CCL is tested with topic mining
(test_uctopic_topics.py)."""

from __future__ import annotations

import gzip
import json
import math
import random
import shutil

import numpy as np
import pytest
import torch

import phrasekit
from phrasekit.encoders.span import SpanEncoder, validate_spans
from phrasekit.eval.entity_clustering import (
    DATASETS,
    acc,
    bio_to_spans,
    cluster_scores,
    evaluate_span_embeddings,
    join_tokens,
    load_entity_mentions,
    load_sentences,
    mention_embed_fn,
    nmi,
    read_bio,
    read_ner_json,
    read_split,
    token_span_to_chars,
)
from phrasekit.models.folders import SPAN_FORMAT, model_folder_format
from phrasekit.training.core.losses import InfoNCELoss
from phrasekit.training.uctopic.common import freeze_word_embeddings, mention_key
from phrasekit.training.uctopic.data import (
    build_uctopic_dataset,
    load_pair_data,
    mine_pairs,
)
from phrasekit.training.uctopic.task import (
    UCTopicConfig,
    distinct_mention_batches,
    pretrain_step,
    train_uctopic,
)

torch.set_num_threads(1)

SENT = "He lived on the east coast of the United States ."
US = (SENT.index("United States"), SENT.index("United States") + len("United States"))
UNI = "Café Zürich — naïve 🙂, U.S.-based Ångström!"


def span_of(sentence: str, mention: str) -> tuple[int, int]:
    a = sentence.index(mention)
    return a, a + len(mention)


@pytest.fixture(scope="module")
def span_enc(minilm):
    """A span encoder sharing the session MiniLM's weights (never trained here)."""
    return SpanEncoder(minilm)


def pooled_tokens(enc: SpanEncoder, sentence: str, span: tuple[int, int], mode: str = "span"
                  ) -> list[str]:
    prep = enc.model.prepare([(sentence, *span)], [mode])
    toks = enc.model.tokenizer.convert_ids_to_tokens(list(prep.sequences[0]))
    return [toks[p] for p in prep.positions[0]]


# ---------------------------------------------------------------------------------- span encoder
def test_validate_spans_errors():
    assert validate_spans([("ab c", (0, 2))]) == [("ab c", 0, 2)]
    assert validate_spans([]) == []
    with pytest.raises(ValueError, match="outside"):
        validate_spans([("abc", (1, 4))])
    with pytest.raises(ValueError, match="outside"):
        validate_spans([("abc", (-1, 2))])
    with pytest.raises(ValueError, match="empty"):
        validate_spans([("abc", (2, 2))])
    with pytest.raises(ValueError, match="empty"):
        validate_spans([("abc", (2, 1))])
    with pytest.raises(ValueError, match="whitespace"):
        validate_spans([("a  b", (1, 3))])
    with pytest.raises(TypeError, match=r"items\[1\].*not str"):
        validate_spans([("ok", (0, 1)), (None, (0, 1))])
    with pytest.raises(TypeError, match="int"):
        validate_spans([("abc", (0.0, 1))])
    with pytest.raises(TypeError, match="int"):
        validate_spans([("abc", (False, 1))])
    with pytest.raises(TypeError, match=r"\(sentence, \(start, end\)\)"):
        validate_spans([("abc", 1)])
    with pytest.raises(TypeError):
        validate_spans("abc")
    with pytest.raises(TypeError):
        validate_spans(None)


def test_modes_agree_and_differ(span_enc, minilm):
    words = ["Paris", "aspirin", "heart attack"]
    span = span_enc.encode_spans([(w, (0, len(w))) for w in words], mode="span")
    mention = span_enc.encode_spans([(SENT, span_of(SENT, "east coast"))]
                                    + [(f"x {w} y", (2, 2 + len(w))) for w in words],
                                    mode="mention")[1:]
    # span mode on a sentence that is just the mention = mention mode without [CLS]/[SEP]
    assert ((span * mention).sum(axis=1) > 0.8).all()
    # mention mode (and the Encoder contract) is the backbone's own mean pooling
    np.testing.assert_allclose(mention, minilm.encode(words), atol=1e-5)
    np.testing.assert_allclose(span_enc.encode(words), mention, atol=1e-5)
    v = {m: span_enc.encode_spans([(SENT, US)], mode=m)[0] for m in ("span", "context",
                                                                    "mention")}
    for x in v.values():
        assert x.dtype == np.float32 and abs(float(np.linalg.norm(x)) - 1) < 1e-5
    assert float(v["span"] @ v["context"]) < 0.95
    assert float(v["span"] @ v["mention"]) < 0.999  # context changes the span vector
    with pytest.raises(ValueError, match="mode"):
        span_enc.encode_spans([(SENT, US)], mode="cls")


def test_context_mode_inserts_mask(span_enc):
    tok = span_enc.model.tokenizer
    assert pooled_tokens(span_enc, SENT, US, "context") == [tok.mask_token]
    prep = span_enc.model.prepare([(SENT, *US)], ["context"])
    words = tok.convert_ids_to_tokens(list(prep.sequences[0]))
    assert "united" not in words and words.count(tok.mask_token) == 1
    assert words[0] == tok.cls_token and words[-1] == tok.sep_token
    span_enc.model.mask_tokens = None
    try:
        assert pooled_tokens(span_enc, SENT, US, "context") == [tok.mask_token] * 2
    finally:
        span_enc.model.mask_tokens = 1
    assert pooled_tokens(span_enc, SENT, US, "span") == ["united", "states"]


def test_offsets_unicode_and_punctuation(span_enc, minilm):
    assert pooled_tokens(span_enc, UNI, span_of(UNI, "Zürich")) == ["zurich"]
    assert pooled_tokens(span_enc, UNI, span_of(UNI, "Ångström")) == ["ang", "##strom"]
    assert pooled_tokens(span_enc, UNI, span_of(UNI, "Ångs")) == ["ang", "##strom"]  # cut word
    assert pooled_tokens(span_enc, UNI, span_of(UNI, "U.S.")) == ["u", ".", "s", "."]
    assert pooled_tokens(span_enc, UNI, span_of(UNI, "🙂")) == ["[UNK]"]
    zw = "a \u200b b"  # a zero-width space: not whitespace, but the tokenizer drops it
    with pytest.raises(ValueError, match=r"items\[1\].*covers no token"):
        span_enc.encode_spans([(SENT, US), (zw, (2, 3))])
    # mention mode pools [CLS] and [SEP] too: such a mention gets minilm's vector of it
    mention = span_enc.encode_spans([(zw, (2, 3))], mode="mention")
    np.testing.assert_allclose(mention, minilm.encode(["\u200b"]), atol=1e-5)


def test_truncation_window_keeps_span(span_enc):
    long = " ".join(["word"] * 300) + " Paris " + " ".join(["x"] * 300)
    prep = span_enc.model.prepare([(long, *span_of(long, "Paris"))], ["span"])
    assert len(prep.sequences[0]) == span_enc.model.max_length and prep.truncated == 1
    assert pooled_tokens(span_enc, long, span_of(long, "Paris")) == ["paris"]
    start = long + " Berlin"  # span at the very end: window clamped to the sentence end
    assert pooled_tokens(span_enc, start, span_of(start, "Berlin")) == ["berlin"]
    assert span_enc.encode_spans([(long, span_of(long, "Paris"))]).shape == (1, 384)


def test_batching_dedup_and_order(span_enc):
    items = [(SENT, US), (SENT, span_of(SENT, "east coast")), ("Apple makes phones .", (0, 5)),
             (UNI, span_of(UNI, "Zürich"))]
    prep = span_enc.model.prepare([(s, a, b) for s, (a, b) in items], ["span"] * 4)
    assert len(prep.sequences) == 3  # both spans of SENT share one forward pass
    big = span_enc.encode_spans(items, batch_size=64)
    small = span_enc.encode_spans(items, batch_size=1)
    np.testing.assert_allclose(big, small, atol=2e-5)
    single = span_enc.encode_spans([items[2]])
    np.testing.assert_allclose(big[2], single[0], atol=2e-5)
    assert span_enc.encode_spans([]).shape == (0, 384)
    with pytest.raises(ValueError, match="empty"):
        span_enc.encode([""])
    with pytest.raises(ValueError, match="batch_size"):
        span_enc.encode_spans(items, batch_size=0)


def test_save_load_round_trip(span_enc, tmp_path):
    folder = span_enc.save_pretrained(tmp_path / "untrained")
    assert model_folder_format(folder) == SPAN_FORMAT
    assert not (folder / "model.safetensors").exists()
    loaded = phrasekit.load(folder)
    assert isinstance(loaded, SpanEncoder)
    items = [(SENT, US), (UNI, span_of(UNI, "Ångström"))]
    np.testing.assert_allclose(loaded.encode_spans(items), span_enc.encode_spans(items),
                               atol=1e-5)
    # a changed backbone is stored as fp16 deltas and restored
    with torch.no_grad():
        layer = loaded.model.backbone.encoder.layer[0].attention.output.dense
        layer.weight.add_(0.01 * torch.randn_like(layer.weight, generator=torch.Generator()
                                                  .manual_seed(0)))
    folder2 = loaded.save_pretrained(tmp_path / "trained")
    assert (folder2 / "model.safetensors").is_file()
    cfg = json.loads((folder2 / "config.json").read_text())
    assert cfg["format"] == "phrasekit-span" and cfg["deltas"] == 1
    again = SpanEncoder.from_pretrained(folder2)
    np.testing.assert_allclose(again.encode_spans(items), loaded.encode_spans(items), atol=1e-4)
    assert float(again.encode_spans(items)[0] @ span_enc.encode_spans(items)[0]) < 0.99999
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a span model"):
        SpanEncoder.from_pretrained(tmp_path / "bad")


# ---------------------------------------------------------------------------------- eval
def test_bio_to_spans():
    assert bio_to_spans(["B-PER", "I-PER", "O", "B-LOC"]) == [(0, 2, "PER"), (3, 4, "LOC")]
    assert bio_to_spans(["O", "I-ORG", "I-ORG"]) == [(1, 3, "ORG")]  # I without B opens
    assert bio_to_spans(["B-A", "I-B", "B-A", "B-A"]) == [(0, 1, "A"), (1, 2, "B"), (2, 3, "A"),
                                                         (3, 4, "A")]
    assert bio_to_spans(["B-Character_Name", "I-Character_Name"]) == [(0, 2, "Character_Name")]
    assert bio_to_spans([]) == [] and bio_to_spans(["O", "O"]) == []
    with pytest.raises(ValueError, match="tag 1"):
        bio_to_spans(["O", "X-PER"])


def test_readers_and_char_offsets(tmp_path):
    bio = tmp_path / "t.bio"
    bio.write_bytes(b"O\twho\r\nB-Director\tsteven\r\nI-Director\tsoderbergh\r\n\r\n"
                    b"B-Actor\tgeorge\r\nI-Actor\tclooney\r\nO\tstars\r\n")
    rows = read_bio(bio)
    assert rows == [(["who", "steven", "soderbergh"], [(1, 3, "Director")]),
                    (["george", "clooney", "stars"], [(0, 2, "Actor")])]
    text, starts = join_tokens(rows[0][0])
    s, e = token_span_to_chars(rows[0][0], starts, 1, 3)
    assert text[s:e] == "steven soderbergh"
    js = tmp_path / "t.json"
    js.write_text(json.dumps({"sentences": [["EU", "rejects", "German", "call"]],
                              "ner": [[[0, 0, "ORG"], [2, 2, "MISC"]]]}) + "\n")
    assert read_ner_json(js) == [(["EU", "rejects", "German", "call"],
                                  [(0, 1, "ORG"), (2, 3, "MISC")])]
    js.write_text(json.dumps({"sentences": [["EU"]], "ner": [[[0, 3, "ORG"]]]}) + "\n")
    with pytest.raises(ValueError, match="outside"):
        read_ner_json(js)
    bio.write_text("B-PER\tx\textra\n")
    with pytest.raises(ValueError, match="TAG<TAB>token"):
        read_bio(bio)


def test_acc_nmi_known_answers():
    y = [0, 0, 1, 1, 2, 2]
    assert acc(y, [2, 2, 0, 0, 1, 1]) == 1.0 and math.isclose(nmi(y, [5, 5, 3, 3, 4, 4]), 1.0)
    assert acc([0, 0, 1, 1], [0, 0, 0, 1]) == 0.75
    assert acc([0, 0, 0, 0, 1, 1], [0, 1, 2, 3, 0, 1]) == pytest.approx(2 / 6)
    assert nmi([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0, abs=1e-12)
    # H(Y) = 1 bit, H(C) = 0.811, I = 0.311 -> arithmetic NMI 2I / (H(Y) + H(C)) = 0.3437
    assert nmi([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.3437, abs=1e-3)
    with pytest.raises(ValueError):
        acc([0, 1], [0])
    rng = np.random.default_rng(0)
    centres = np.eye(3, 16, dtype=np.float32) * 5
    emb = np.concatenate([centres[i] + rng.normal(0, 0.1, (10, 16)) for i in range(3)])
    gold = [t for t in ("a", "b", "c") for _ in range(10)]
    scores = cluster_scores(emb, gold, seeds=(0, 1))
    assert scores["acc"] == 1.0 and scores["nmi"] == pytest.approx(1.0) and scores["k"] == 3
    with pytest.raises(ValueError, match="2 gold types"):
        cluster_scores(emb, ["a"] * 30)


@pytest.mark.shared
def test_datasets_load(shared_data):
    sizes = {"conll2003": 4946, "bc5cdr": 9658, "mit_movie_trivia10k13": 1982}
    for name, n in sizes.items():
        ms = load_entity_mentions(name, shared_data)
        assert len(ms) == n and {m.label for m in ms} == set(DATASETS[name].types)
        assert all(m.text == m.text.strip() and m.text for m in ms[:200])
    ms = load_entity_mentions("conll2003", shared_data)
    with open(shared_data / "conll2003" / "test_entity_mentions.tsv", encoding="utf-8") as fh:
        rows = [line.rstrip("\n").split("\t") for line in fh][1:]
    assert [(m.text, m.label) for m in ms] == [tuple(r) for r in rows]
    mit = shared_data / "mit_movie_trivia10k13"
    assert read_split("mit_movie_trivia10k13", shared_data) == read_ner_json(mit / "test.json")
    assert len(load_sentences("mit_movie_trivia10k13", shared_data)) == 1953
    assert len(load_entity_mentions("mit_movie_trivia10k13", shared_data, types="all")) == 5686
    with pytest.raises(ValueError, match="unknown"):
        load_entity_mentions("wnut", shared_data)


def test_evaluate_span_embeddings(minilm):
    from phrasekit.eval.entity_clustering import MentionInstance

    sents = ["Paris is a city in France .", "Berlin is big .", "Apple sold phones .",
             "Google hired people .", "I met London yesterday in Rome ."]
    ms = [MentionInstance(s, *span_of(s, w), t, i) for i, (s, w, t) in enumerate(
        [(sents[0], "Paris", "LOC"), (sents[1], "Berlin", "LOC"), (sents[2], "Apple", "ORG"),
         (sents[3], "Google", "ORG"), (sents[4], "Rome", "LOC")])]
    scores = evaluate_span_embeddings(mention_embed_fn(minilm), ms, seeds=(0,))
    assert set(scores) >= {"acc", "nmi", "acc_std"} and scores["n"] == 5
    with pytest.raises(ValueError, match="rows"):
        evaluate_span_embeddings(lambda items: np.zeros((1, 3)), ms)


# ---------------------------------------------------------------------------------- pair data
def test_mine_pairs_groups_and_caps():
    inst = [(0, 0, 5, "apple"), (1, 3, 8, "apple"), (1, 10, 15, "apple"), (2, 0, 5, "apple"),
            (0, 7, 9, "pear"), (3, 0, 4, "solo")]
    keys, counts, pairs = mine_pairs(inst, max_instances_per_mention=64,
                                     max_pairs_per_mention=16, seed=0)
    assert keys == ["apple"] and counts == [3] and len(pairs) == 3
    for m, sa, _a0, _a1, sb, _b0, _b1 in pairs:
        assert m == 0 and sa != sb
    assert all(p[1:4] != [1, 10, 15] and p[4:7] != [1, 10, 15] for p in pairs)  # first per sent
    many = [(s, 0, 3, "x") for s in range(20)]
    _, _, capped = mine_pairs(many, max_instances_per_mention=5, max_pairs_per_mention=4, seed=1)
    assert len(capped) == 4 and len({(p[1], p[4]) for p in capped}) == 4
    assert len({s for p in capped for s in (p[1], p[4])}) <= 5
    with pytest.raises(ValueError):
        mine_pairs(many, max_instances_per_mention=1, max_pairs_per_mention=4, seed=0)


TOY_DOCS = [
    "The United States signed a trade deal with China on Monday. Officials in Beijing praised "
    "the trade deal warmly. Apple released a new phone in California.",
    "Tourists love the United States in the summer months. Apple shares rose sharply on Monday "
    "morning. Reporters in Beijing covered the summit for hours.",
]


@pytest.fixture(scope="module")
def toy_pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("uct_shared")
    (root / "corpora" / "toy").mkdir(parents=True)
    with open(root / "corpora" / "toy" / "documents.jsonl", "w", encoding="utf-8") as fh:
        for i, t in enumerate(TOY_DOCS):
            fh.write(json.dumps({"id": str(i), "text": t}) + "\n")
    (root / "data" / "conll2003").mkdir(parents=True)
    blocked = ["Reporters", "in", "Beijing", "covered", "the", "summit", "for", "hours", "."]
    (root / "data" / "conll2003" / "test.json").write_text(
        json.dumps({"sentences": [blocked], "ner": [[]]}) + "\n")
    out = root / "pairs"
    report = build_uctopic_dataset(out, corpora=["toy"], shared_dir=root, max_words=1000,
                                   show_progress=False)
    return out, report


def test_build_pairs_from_corpus(toy_pairs):
    out, report = toy_pairs
    counts = report["counts"]
    assert counts["sentences_dropped_eval_overlap"] == 1  # the CoNLL "test" sentence
    data = load_pair_data(out)
    assert {"united states", "apple", "trade deal"} <= set(data.mentions)
    assert "beijing" not in data.mentions  # its second sentence was an evaluation sentence
    for i in range(len(data)):
        (sa, a0, a1), (sb, b0, b1) = data.pair_items(i)
        assert sa != sb
        assert mention_key(sa[a0:a1]) == mention_key(sb[b0:b1]) == data.mentions[data.pairs[i, 0]]
    assert counts["pairs"] == len(data) and list((out / "cache").glob("parse-*.jsonl.gz"))
    again = build_uctopic_dataset(out, corpora=["toy"], shared_dir=out.parent, max_words=1000,
                                  show_progress=False)  # from the parse cache
    assert again["counts"] == counts


# ---------------------------------------------------------------------------------- training
def test_damaged_pair_files_are_refused_by_line(toy_pairs, tmp_path):
    """Pair rows that a build never writes (a negative index, a span past the sentence, a
    float, six columns), a mention row that is no list and a file that is not gzip are named
    by file and line, not read as other rows or crashes."""
    out, _ = toy_pairs
    with gzip.open(out / "pairs.jsonl.gz", "rt") as fh:
        good = [json.loads(x) for x in fh]
    bad_rows = {"sentence -1 is not": [good[0][0], -1, *good[0][2:]],
                "span \\(4, 999\\) is no text": [*good[0][:2], 4, 999, *good[0][4:]],
                "whole numbers": [*good[0][:3], 21.7, *good[0][4:]],
                "not a pair row": good[0][:6]}
    for message, row in bad_rows.items():
        d = tmp_path / f"d{len(message)}"
        shutil.copytree(out, d)
        with gzip.open(d / "pairs.jsonl.gz", "wt") as fh:
            fh.write(json.dumps(good[1]) + "\n" + json.dumps(row) + "\n")
        with pytest.raises(ValueError, match=f"pairs.jsonl.gz:2: .*{message}"):
            load_pair_data(d)
    with gzip.open(d / "mentions.jsonl.gz", "wt") as fh:
        fh.write("[]\n")
    with pytest.raises(ValueError, match=r"mentions\.jsonl\.gz:1: not a"):
        load_pair_data(d)
    (d / "sentences.jsonl.gz").write_text('"a plain file"\n')
    with pytest.raises(ValueError, match=r"sentences\.jsonl\.gz: not a whole gzip file"):
        load_pair_data(d)


def test_distinct_mention_batches():
    mentions = np.array([0, 0, 0, 1, 2, 3, 4, 5])
    batches = distinct_mention_batches(mentions, 4, seed=0, epoch=0)
    for b in batches:
        assert len(set(mentions[b].tolist())) == len(b) >= 2
    again = distinct_mention_batches(mentions, 4, seed=0, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))


def test_pretrain_steps_lower_loss():
    enc = SpanEncoder("minilm", max_length=32)
    model = enc.model
    freeze_word_embeddings(model)
    model.eval()  # no dropout: the same batch gives the same loss before an update
    anchors = [(s, *span_of(s, m)) for s, m in [
        ("The United States signed a deal .", "United States"),
        ("Apple released a phone .", "Apple"), ("Beijing hosted the summit .", "Beijing"),
        ("The river flooded the valley .", "river")]]
    positives = [(s, *span_of(s, m)) for s, m in [
        ("Tourists love the United States .", "United States"),
        ("Apple shares rose sharply .", "Apple"), ("Reporters in Beijing waited .", "Beijing"),
        ("We swam in the river .", "river")]]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    loss_fn = InfoNCELoss(0.05)
    losses = []
    for _ in range(4):
        loss = pretrain_step(model, anchors, positives, loss_fn, 0.5, random.Random(0))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def _checkpoint_tensors(folder) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "checkpoint.safetensors"))


def test_train_uctopic_resumes_bit_exactly(toy_pairs, tmp_path):
    data_dir, _ = toy_pairs

    def cfg(out, steps, **kw):
        return UCTopicConfig(data_dir=str(data_dir), out_dir=str(out), batch_size=2,
                             max_steps=steps, max_length=24, checkpoint_every=1, log_every=1,
                             warmup_steps=2, show_progress=False, **kw)

    def crash_at_two(_encoder, step):
        if step == 2:  # after step 2's update, before its checkpoint: the run restarts at 1
            raise KeyboardInterrupt
        return {"probe": float(step)}

    straight = train_uctopic(cfg(tmp_path / "a", 3))
    with pytest.raises(KeyboardInterrupt):
        train_uctopic(cfg(tmp_path / "b", 3), callback=crash_at_two)
    resumed = train_uctopic(cfg(tmp_path / "b", 3))
    assert resumed["steps"] == straight["steps"] == 3
    assert [h["loss"] for h in resumed["history"]] == [h["loss"] for h in straight["history"]]
    assert resumed["evaluations"] == [{"step": 1, "probe": 1.0}]  # kept in the checkpoint
    a, b = _checkpoint_tensors(tmp_path / "a"), _checkpoint_tensors(tmp_path / "b")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    enc = phrasekit.load(tmp_path / "b" / "model")
    assert isinstance(enc, SpanEncoder) and enc.model.max_length == 128
    assert enc.encode_spans([(SENT, US)]).shape == (1, 384)
    saved = (tmp_path / "b" / "report.json").read_text()
    assert str(tmp_path) not in saved and str(data_dir) not in saved
    assert json.loads(saved)["config"]["data_dir"] == data_dir.name
    bad = cfg(tmp_path / "b", 4)
    bad.lr = 1.0
    with pytest.raises(ValueError, match="different settings"):
        train_uctopic(bad)
    other = tmp_path / "other" / data_dir.name  # the same name and size, other sentences
    shutil.copytree(data_dir, other)
    with gzip.open(data_dir / "sentences.jsonl.gz", "rt") as fh:
        sentences = [json.loads(x) for x in fh]
    with gzip.open(other / "sentences.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(t.upper()) + "\n" for t in sentences)
    moved = cfg(tmp_path / "b", 4)
    moved.data_dir = str(other)
    with pytest.raises(ValueError, match="trained on other data"):
        train_uctopic(moved)
    with pytest.raises(ValueError, match="keep_prob"):
        UCTopicConfig(data_dir="x", out_dir="y", keep_prob=2).validate()


def test_train_uctopic_time_budget_only(toy_pairs, tmp_path):
    data_dir, _ = toy_pairs
    report = train_uctopic(UCTopicConfig(
        data_dir=str(data_dir), out_dir=str(tmp_path), batch_size=2, max_steps=None,
        max_minutes=1e-4, max_length=24, show_progress=False))
    assert report["stop_reason"] == "max_minutes" and report["steps"] >= 1
    assert report["history"][-1]["step"] == report["steps"]  # the partial interval is kept


def test_cli_train_uctopic_bad_input() -> None:
    from typer.testing import CliRunner

    from phrasekit.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["train", "uctopic", "--data", "/no/such/dir", "--out", "x", "-q"])
    assert res.exit_code == 2 and "not a folder" in res.output
    res = runner.invoke(app, ["train", "uctopic-data", "--help"])
    assert res.exit_code == 0 and "Example" in res.output


def test_packaged_uctopic_minilm(span_enc):
    enc = phrasekit.load("uctopic-minilm")
    assert isinstance(enc, SpanEncoder) and enc.name == "uctopic-minilm"
    assert enc.config["training"]["method"] == "uctopic-pretrain"
    items = [(SENT, US)]
    trained, raw = enc.encode_spans(items), span_enc.encode_spans(items)
    assert trained.shape == raw.shape == (1, 384)
    assert 0.5 < float(trained[0] @ raw[0]) < 0.9999  # deltas applied, still MiniLM-like
