#!/usr/bin/env python3
"""Writes a made-up DeepBench V100 workbook for tests/test_efficiency_conv.c: every ResNet-50
shape bench/deepbench_conv.py pools, at batch 8 and 16, in both sheets, each pass timed
at 0.4 of the sheet's peak plus ddpsim's 4 us kernel_overhead per kernel it charges: the
forward 4 us, the input and weight gradients (one backward kernel) 2 us each, the stem's
weight gradient 4 us (its input gradient N/A*, as DeepBench leaves it). With --drop-stem16 the fp16
sheet lacks the batch-16 stem row."""
import sys
import zipfile

sys.path.insert(0, "bench")
import deepbench_conv as db  # noqa: E402  (the shapes and sheets under test)


def cell(v):
    if isinstance(v, str):
        return '<c t="str"><v>%s</v></c>' % v
    return "<c><v>%r</v></c>" % v


def sheet_xml(peak, drop_stem16):
    rows = [["Convolution"]]
    for batch in (8, 16):
        for app, w, c, k, f, st, _ in db.RESNET50:
            if app == "Vision" and (batch != 16 or drop_stem16):
                continue
            p = (w + 2 * (f // 2) - f) // st + 1
            flops = 2.0 * batch * p * p * k * c * f * f
            ms = flops / (0.4 * peak * 1e12) * 1e3
            stem = app == "Vision"
            rows.append([app, w, w, c, batch, k, f, f, f // 2, f // 2, st, st, ms + 0.004,
                         "N/A*" if stem else ms + 0.002, ms + (0.004 if stem else 0.002), p, p])
    body = "".join("<row>%s</row>" % "".join(cell(v) for v in r) for r in rows)
    return ('<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            "<sheetData>%s</sheetData></worksheet>" % body)


def main():
    out, drop = sys.argv[1], "--drop-stem16" in sys.argv[2:]
    names = list(db.SHEETS.values())
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("xl/workbook.xml",
                   '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
                   'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
                   "<sheets>%s</sheets></workbook>"
                   % "".join('<sheet name="%s" sheetId="%d" r:id="rId%d"/>' % (n[0], i + 1, i + 1)
                             for i, n in enumerate(names)))
        z.writestr("xl/_rels/workbook.xml.rels",
                   '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
                   'relationships">%s</Relationships>'
                   % "".join('<Relationship Id="rId%d" Target="worksheets/sheet%d.xml"/>'
                             % (i + 1, i + 1) for i in range(len(names))))
        for i, (name, peak, key) in enumerate(names):
            z.writestr("xl/worksheets/sheet%d.xml" % (i + 1),
                       sheet_xml(peak, drop and key == "conv_half"))


if __name__ == "__main__":
    main()
