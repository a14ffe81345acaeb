#!/usr/bin/env python3
"""Writes the `linkly-*` fixtures of testdata/corpus: files written for this repository (text of
our own, under the repository's licence) that stand in for corpus files we may not redistribute:
legacy text encodings, undeclared or mislabelled HTML charsets, CP932/GBK CSV, and a DOCX with
six heading levels. Deterministic: running it again rewrites the same bytes.

    python3 testdata/make_fixtures.py
"""

from __future__ import annotations

import zipfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"


def write(rel: str, data: bytes) -> None:
    path = CORPUS / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- txt -------------------------------------------------------------------------------------

EUC_JP = """索引ツールの使い方

このツールは、フォルダの中の文書を読み込み、検索できるようにします。
最初にフォルダを登録してください。次に「索引を作成」を押します。
プロジェクトの設定は、設定ファイルに保存されます。
コンソール アプリケーションから実行することもできます。

よくある質問

質問：日本語の文書も検索できますか。
回答：はい、ひらがな、カタカナ、漢字のどれでも検索できます。
質問：古い文字コードのファイルはどうなりますか。
回答：シフトJISやEUC-JPのファイルも自動的に判定して読み込みます。
"""

CZECH = """Obecní knihovna oznamuje veřejnosti, že od příštího měsíce rozšiřuje otevírací dobu.
Čtenáři si mohou půjčovat knihy i v sobotu dopoledne. Děti do patnácti let mají
členství zdarma a pro školy připravujeme besedy s českými spisovateli.
Žádáme návštěvníky, aby vracené knihy odkládali do schránky u vchodu.
Přejeme vám příjemné čtení a těšíme se na vaši návštěvu. Šťastný nový rok!
Knihovnice paní Řezníčková děkuje všem dobrovolníkům za pomoc při stěhování fondu.
"""

FRENCH = """Chère Hélène,

Merci pour ta lettre… J’ai lu avec plaisir le récit de ton voyage à Besançon.
L’été dernier, nous avons passé quelques jours près du lac ; les enfants ont découvert
la pêche, et moi j’ai enfin terminé le roman que tu m’avais prêté — « un chef-d’œuvre »,
comme tu disais. Ça m’a rappelé nos promenades au bord de la Loire.
Je t’embrasse, à très bientôt.
François
"""

TICKS = ["Time,Station,Temperature"] + [
    f"2024-03-0{1 + i // 6} {6 + i % 6 * 3:02}:00,Station {chr(65 + i % 4)},{(i * 37) % 200 / 10:.1f}"
    for i in range(24)
]


def text_files() -> None:
    write("txt/linkly-euc-jp.txt", EUC_JP.encode("euc_jp"))
    write("txt/linkly-windows-1250-czech.txt", CZECH.encode("cp1250"))
    write("txt/linkly-windows-1252-french.txt", FRENCH.encode("cp1252"))
    write("txt/linkly-utf16le-nobom.txt", ("\n".join(TICKS) + "\n").encode("utf-16-le"))


# --- html ------------------------------------------------------------------------------------

GB2312_HTML = """<html><head><title>图书馆通知</title></head>
<body>
<h1>图书馆开放时间通知</h1>
<p>各位读者：从下个月开始，图书馆周六上午也对外开放。</p>
<p>儿童阅览室新增了一批图画书，欢迎家长带孩子前来阅读。</p>
<p>请爱护图书，按时归还。谢谢大家的支持！</p>
</body></html>
"""

ARABIC_HTML = """<html><head><meta charset="UTF-8"><title>Arabic notice</title></head>
<body>
<h1>إعلان المكتبة</h1>
<p>تعلن المكتبة العامة أنها ستفتح أبوابها يوم السبت صباحا ابتداء من الشهر القادم.</p>
<p>يمكن للأطفال الاشتراك مجانا، ونرحب بزيارة المدارس والطلاب في جميع الأيام.</p>
<p>نرجو من القراء إعادة الكتب في الموعد المحدد والمحافظة عليها. شكرا لكم على تعاونكم.</p>
</body></html>
"""

HEADINGS_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Linkly HTML fixture</title>
<style>body { font-family: serif; }</style></head>
<body>
<h1>Linkly HTML fixture</h1>
<p>A page written for the tests: headings, a list, a table and a script.</p>
<h2>Lists</h2>
<ul><li>first item</li><li>second item</li></ul>
<h2>Tables</h2>
<table><tr><th>X</th><th>Y</th><th>Z</th></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>
<h3>Nested heading</h3>
<p>Text under the nested heading.</p>
<script>var hidden = "scriptonlyword";</script>
<h1>Second part</h1>
<p>The end.</p>
</body></html>
"""


def html_files() -> None:
    write("html/linkly-GB2312-undeclared.html", GB2312_HTML.encode("gb2312"))
    write("html/linkly-windows-1256-mislabelled.html", ARABIC_HTML.encode("cp1256"))
    write("html/linkly-headings.html", HEADINGS_HTML.encode("utf-8"))


# --- csv -------------------------------------------------------------------------------------

PREFECTURES = (
    "北海道 青森県 岩手県 宮城県 秋田県 山形県 福島県 茨城県 栃木県 群馬県 埼玉県 千葉県 東京都 "
    "神奈川県 新潟県 富山県 石川県 福井県 山梨県 長野県 岐阜県 静岡県 愛知県 三重県 滋賀県 京都府 "
    "大阪府 兵庫県 奈良県 和歌山県 鳥取県 島根県 岡山県 広島県 山口県 徳島県 香川県 愛媛県 高知県 "
    "福岡県 佐賀県 長崎県 熊本県 大分県 宮崎県 鹿児島県 沖縄県"
).split()

PROVINCES = (
    "北京市 天津市 河北省 山西省 内蒙古自治区 辽宁省 吉林省 黑龙江省 上海市 江苏省 浙江省 安徽省 "
    "福建省 江西省 山东省 河南省 湖北省 湖南省 广东省 广西壮族自治区 海南省 重庆市 四川省 贵州省 "
    "云南省 西藏自治区 陕西省 甘肃省 青海省 宁夏回族自治区 新疆维吾尔自治区"
).split()


def csv_files() -> None:
    rows = ["番号,都道府県,登録件数,備考"]
    for i, name in enumerate(PREFECTURES, 1):
        rows.append(f'{i},{name},"{(i * 7919) % 900 + 100},{(i * 104729) % 1000:03}",サンプル値')
    write("csv/linkly-cp932.csv", ("\r\n".join(rows) + "\r\n").encode("cp932"))
    rows = ["编号,地区,备注"]
    for i, name in enumerate(PROVINCES, 1):
        rows.append(f"{i:03},{name},示例数据")
    write("csv/linkly-gbk.csv", ("\n".join(rows) + "\n").encode("gbk"))


# --- Japanese legacy encodings (CP932 with half-width katakana, EUC-JP, ISO-2022-JP) -------------

# Rows in the layout of Japan Post's KEN_ALL.CSV (the national postal-code table, published in
# CP932 with the readings in half-width katakana; Japan Post does not claim copyright on the
# postal-code data): local code, old code, postal code, three readings, three names, six flags.
KEN_ALL = [
    ("01101", "060  ", "0600000", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｲｶﾆｹｲｻｲｶﾞﾅｲﾊﾞｱｲ", "北海道", "札幌市中央区", "以下に掲載がない場合", "0,0,0,0,0,0"),
    ("01101", "064  ", "0640941", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｱｻﾋｶﾞｵｶ", "北海道", "札幌市中央区", "旭ケ丘", "0,0,1,0,0,0"),
    ("01101", "060  ", "0600041", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｵｵﾄﾞｵﾘﾋｶﾞｼ", "北海道", "札幌市中央区", "大通東", "0,0,1,0,0,0"),
    ("01101", "060  ", "0600042", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｵｵﾄﾞｵﾘﾆｼ(1-19ﾁｮｳﾒ)", "北海道", "札幌市中央区", "大通西（１～１９丁目）", "1,0,1,0,0,0"),
    ("01101", "064  ", "0640820", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｵｵﾄﾞｵﾘﾆｼ(20-28ﾁｮｳﾒ)", "北海道", "札幌市中央区", "大通西（２０～２８丁目）", "1,0,1,0,0,0"),
    ("01101", "060  ", "0600031", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｷﾀ1ｼﾞｮｳﾋｶﾞｼ", "北海道", "札幌市中央区", "北一条東", "0,0,1,0,0,0"),
    ("01101", "060  ", "0600001", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｷﾀ1ｼﾞｮｳﾆｼ(1-19ﾁｮｳﾒ)", "北海道", "札幌市中央区", "北一条西（１～１９丁目）", "1,0,1,0,0,0"),
    ("01101", "064  ", "0640821", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｷﾀ1ｼﾞｮｳﾆｼ(20-28ﾁｮｳﾒ)", "北海道", "札幌市中央区", "北一条西（２０～２８丁目）", "1,0,1,0,0,0"),
    ("01101", "060  ", "0600032", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｷﾀ2ｼﾞｮｳﾋｶﾞｼ", "北海道", "札幌市中央区", "北二条東", "0,0,1,0,0,0"),
    ("01101", "064  ", "0640959", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ﾐﾔﾉﾓﾘ", "北海道", "札幌市中央区", "宮の森", "0,0,1,0,0,0"),
    ("01101", "064  ", "0640931", "ﾎｯｶｲﾄﾞｳ", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ﾅｶｼﾞﾏｺｳｴﾝ", "北海道", "札幌市中央区", "中島公園", "0,0,0,0,0,0"),
    ("13101", "100  ", "1000000", "ﾄｳｷｮｳﾄ", "ﾁﾖﾀﾞｸ", "ｲｶﾆｹｲｻｲｶﾞﾅｲﾊﾞｱｲ", "東京都", "千代田区", "以下に掲載がない場合", "0,0,0,0,0,0"),
    ("13101", "102  ", "1020072", "ﾄｳｷｮｳﾄ", "ﾁﾖﾀﾞｸ", "ｲｲﾀﾞﾊﾞｼ", "東京都", "千代田区", "飯田橋", "0,0,1,0,0,0"),
    ("13101", "100  ", "1000011", "ﾄｳｷｮｳﾄ", "ﾁﾖﾀﾞｸ", "ｳﾁｻｲﾜｲﾁｮｳ", "東京都", "千代田区", "内幸町", "0,0,1,0,0,0"),
    ("13101", "100  ", "1000014", "ﾄｳｷｮｳﾄ", "ﾁﾖﾀﾞｸ", "ﾅｶﾞﾀﾁｮｳ", "東京都", "千代田区", "永田町", "0,0,1,0,0,0"),
    ("13101", "101  ", "1010021", "ﾄｳｷｮｳﾄ", "ﾁﾖﾀﾞｸ", "ｿﾄｶﾝﾀﾞ", "東京都", "千代田区", "外神田", "0,0,1,0,0,0"),
]

# CP932 beyond JIS X 0208: NEC row 13 (①, ㈱, ㍻, Ⅳ) and an IBM extension kanji (髙).
CP932_EXTENSIONS = """お知らせ
①　㈱髙島屋の本社は大阪市にあります。
②　会議は㍻三十年から毎年開かれています。
③　第Ⅳ期の報告書は来月に公開します。
ﾊﾝｶｸｶﾀｶﾅ ﾃﾞ ｶｲﾀ ｷﾞｮｳ ﾓ ｱﾘﾏｽ｡
"""


def vue_ja_paragraphs() -> str:
    """Four paragraphs of the Japanese Vue guide this repository carries (CC-BY-4.0)."""
    md = (CORPUS / "md" / "vuedocs-ja-component-basics.md").read_text(encoding="utf-8")
    lines = md.split("\n")
    return "\n\n".join(lines[n - 1] for n in (7, 13, 94, 96)) + "\n"


def japanese_files() -> None:
    rows = [",".join([f'{r[0]}', *(f'"{c}"' for c in r[1:9]), r[9]]) for r in KEN_ALL]
    write("csv/linkly-ken-all-cp932.csv", ("\r\n".join(rows) + "\r\n").encode("cp932"))
    write("txt/linkly-cp932-extensions.txt", CP932_EXTENSIONS.replace("\n", "\r\n").encode("cp932"))
    vue = vue_ja_paragraphs()
    write("txt/linkly-euc-jp-vuedocs.txt", (vue + "ｶﾀｶﾅ ﾓ ﾖﾒﾏｽ\n").encode("euc_jp"))
    write("txt/linkly-iso-2022-jp-vuedocs.txt", vue.encode("iso2022_jp"))


# --- docx ------------------------------------------------------------------------------------

HEADINGS = [
    "A Test of Headers",
    "Second Level",
    "Third level",
    "Fourth level",
    "Fifth level",
    "Sixth level",
]

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_file() -> None:
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{n}"><w:name w:val="heading {n}"/>'
        f'<w:pPr><w:outlineLvl w:val="{n - 1}"/></w:pPr></w:style>'
        for n in range(1, 7)
    )
    body = ""
    for n, title in enumerate(HEADINGS, 1):
        body += f'<w:p><w:pPr><w:pStyle w:val="Heading{n}"/></w:pPr><w:r><w:t>{title}</w:t></w:r></w:p>'
        body += f"<w:p><w:r><w:t>Text under the level {n} heading.</w:t></w:r></w:p>"
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
            '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
            "</Types>"
        ),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
            "</Relationships>"
        ),
        "word/_rels/document.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
            "</Relationships>"
        ),
        "word/styles.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles {W}>{styles}</w:styles>',
        "word/document.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>{body}</w:body></w:document>'
        ),
    }
    path = CORPUS / "docx/linkly-headers.docx"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, xml in parts.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, xml)


if __name__ == "__main__":
    text_files()
    html_files()
    csv_files()
    japanese_files()
    docx_file()
