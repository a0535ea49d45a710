"""Reading GLUE SST-2's `train.tsv` (sentence<TAB>label, a header line) for the tools here."""


def read_sst2(path):
    """[(sentence, label)] in file order: split at the last tab, header and blank lines skipped,
    CRLF tolerated, the sentence exactly as written."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines):
        line = line.rstrip("\r")
        if not line:
            continue
        text, label = line.rsplit("\t", 1)
        if n == 0 and label == "label":
            continue
        rows.append((text, int(label)))
    return rows
