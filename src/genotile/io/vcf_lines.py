"""A block of VCF records, line by line: each record's first nine columns under the reader's
rules (readers/vcf.py: FILTER, multiallelic records, variant IDs), and where its calls are.

`scan` splits each line's first nine columns in Python and finds the calls by byte offsets: a
GT-only line whose calls are all three characters has them at fixed offsets from the line's
end (the common case: one copy per line, `fixed`); otherwise the calls start after the
block's tabs (vcf_calls.CallDecoder). A record it does not handle raises HandOver.
"""

from genotile.io.vcf_spans import TAB, HandOver


class Lines:
    """Per-record facts of one block, from each line's first nine columns."""

    def __init__(self):
        self.ss, self.le, self.fixed = [], [], []  # calls' start, line end, fixed width? (genotype records)
        self.alts = []  # ALT count of each genotype record
        self.ids = []  # variant IDs, one per output row (several for a split record)
        self.records = 0
        self.stats = dict.fromkeys(
            (
                "records",
                "no_gt_skipped",
                "filter_failed",
                "filter_skipped",
                "multiallelic_skipped",
                "multiallelic_split",
                "split_variants",
            ),
            0,
        )


def scan(
    buf: bytes, start: int, end: int, *, nf: int, skip_multiallelic: bool, filter_pass: bool, want_ids: bool
) -> Lines:
    """The rules of readers/vcf.py, per record, from the first nine columns (in Python), of the lines in
    [start, end) of buf; `nf` sample columns in the file."""
    lines = Lines()
    st = lines.stats
    ss_l, le_l, fixed_l, alts_l, ids = lines.ss, lines.le, lines.fixed, lines.alts, lines.ids
    calls_len = 4 * nf  # a GT-only line of 3-character calls: its calls and the newline
    find, pos, n_rec = buf.find, start, 0
    while pos < end:
        le = find(b"\n", pos, end)
        n_rec += 1
        ss = le - calls_len + 1
        fixed = False
        if ss > pos and buf[ss - 1] == TAB:
            pre = buf[pos : ss - 1].split(b"\t")
            fixed = len(pre) == 9 and pre[8] == b"GT"
        if not fixed:
            pre = buf[pos:le].split(b"\t", 9)
            if len(pre) != 10:
                raise HandOver
            ss = le - len(pre[9])
            del pre[9]
        chrom, pos_txt, vid, ref, alt, _qual, filt, _info, fmt = pre
        pos = le + 1
        if not pos_txt.isdigit() or not chrom or chrom[0] == 35 or not vid or not ref or not alt:
            raise HandOver  # (htslib reads an empty ID, REF or ALT as '.')
        if not fixed and fmt != b"GT" and not fmt.startswith(b"GT:"):
            if b"GT" in fmt.split(b":"):
                raise HandOver  # GT not the first key
            st["no_gt_skipped"] += 1
            continue
        if not fixed and buf.count(b":", ss, le) > fmt.count(b":") * nf:
            # more subfields than FORMAT has keys (e.g. `0/1:5` under GT): htslib refuses the
            # record. (Counted per line: one call's extra field offset by another's missing
            # one is not seen here.)
            raise HandOver
        if filt != b"PASS" and filt != b".":
            st["filter_failed"] += 1
            if filter_pass:
                st["filter_skipped"] += 1
                continue
        if b"," in alt:
            alts = alt.split(b",")
            if skip_multiallelic:
                st["multiallelic_skipped"] += 1
                continue
            st["multiallelic_split"] += 1
            st["split_variants"] += len(alts)
            n_alts = len(alts)
        else:
            n_alts = 0 if alt == b"." else 1
        if want_ids:
            try:
                if pos_txt[0] == 48:  # '0': a leading zero; the ID has the number
                    pos_txt = str(int(pos_txt)).encode()
                if n_alts > 1:
                    name = chrom + b":" + pos_txt + b":" + ref + b":"
                    ids.extend((name + a).decode() for a in alts)
                elif vid != b".":
                    ids.append(vid.decode())
                else:
                    ids.append((chrom + b":" + pos_txt + b":" + ref + b":" + alt).decode())
            except UnicodeDecodeError:
                raise HandOver from None
        else:
            ids.extend([None] * max(1, n_alts))
        ss_l.append(ss)
        le_l.append(le)
        fixed_l.append(fixed)
        alts_l.append(n_alts)
    lines.records = n_rec
    st["records"] = n_rec
    return lines
