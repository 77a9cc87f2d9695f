"""Pages in legacy charsets, without a declared charset, decode to their right text."""
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from sitemapd.fingerprint import Settings, TemplateMemory
from sitemapd.fingerprint.decode import decoded
from sitemapd.sources.content import read_page
from sitemapd.sources.pages import read_file

JAPANESE = (
    "東京で新しい路面電車が開業、市民が歓迎",
    "市議会は火曜日の夜、来年度の予算案を賛成多数で可決した。"
    "新しい路線は駅から空港までを結び、朝と夕方には八分おきに運行される。"
    "市長は記者会見で、渋滞の緩和と観光客の増加に期待していると述べた。"
    "一方で、工事の費用が当初の見込みを大きく上回ったことについては批判も出ている。",
)
CHINESE = (
    "上海新建的有轨电车线路今天正式开通",
    "市议会周二晚上以多数票通过了明年的预算方案。"
    "新线路连接火车站和机场，早晚高峰期间每八分钟发一班车。"
    "市长在新闻发布会上表示，希望这条线路能够缓解交通拥堵并吸引更多游客。"
    "不过，也有市民批评工程费用大大超出了最初的预算。",
)
TRADITIONAL = (
    "台北新建的輕軌電車路線今天正式通車",
    "市議會週二晚上以多數票通過了明年的預算方案。"
    "新路線連接火車站和機場，早晚尖峰時段每八分鐘發一班車。"
    "市長在記者會上表示，希望這條路線能夠緩解交通壅塞並吸引更多遊客。"
    "不過，也有市民批評工程費用大大超出了當初的預算。",
)
KOREAN = (
    "서울에 새로운 노면전차 노선이 개통되었다",
    "시의회는 화요일 밤 내년도 예산안을 찬성 다수로 통과시켰다. "
    "새 노선은 기차역과 공항을 연결하며 출퇴근 시간에는 팔 분 간격으로 운행된다. "
    "시장은 기자회견에서 교통 혼잡이 줄어들고 관광객이 늘어나기를 기대한다고 말했다. "
    "한편 공사 비용이 처음 예상보다 크게 늘어난 것에 대해서는 비판도 나오고 있다.",
)
RUSSIAN = (
    "В Москве открылась новая трамвайная линия",
    "Городской совет во вторник вечером большинством голосов принял бюджет на следующий год. "
    "Новая линия соединит вокзал с аэропортом, а в часы пик трамваи будут ходить каждые "
    "восемь минут. Мэр заявил на пресс-конференции, что рассчитывает на снижение пробок и "
    "рост числа туристов. Однако часть жителей критикует проект за то, что его стоимость "
    "намного превысила первоначальную смету.",
)


@pytest.mark.parametrize(
    ("encoding", "texts"),
    [
        ("euc_jp", JAPANESE),
        ("shift_jis", JAPANESE),
        ("iso2022_jp", JAPANESE),
        ("gb18030", CHINESE),
        ("big5", TRADITIONAL),
        ("euc_kr", KOREAN),
        ("koi8_r", RUSSIAN),
        ("cp1251", RUSSIAN),
    ],
)
def test_undeclared_legacy_charsets_decode_to_their_text(
    encoding: str, texts: tuple[str, str]
) -> None:
    title, body = texts
    page = (
        f"<html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1><p>{body}</p></body></html>"
    )
    data = page.encode(encoding)
    text, utf8 = decoded(data)
    assert text == page
    assert utf8 is None
    assert read_page(data).title == title
    reading = read_file("a.html", data, Settings()).reading
    assert reading is not None
    assert body.replace(" ", "") in "".join(reading.kept(TemplateMemory())).replace(" ", "")


def test_a_declared_charset_wins_over_detection() -> None:
    title, body = RUSSIAN
    page = f'<html><head><meta charset="koi8-r"><title>{title}</title></head><p>{body}</p>'
    assert read_page(page.encode("koi8_r")).title == title
    # Declared wrongly, the declaration still wins, as in a browser.
    wrong = page.replace("koi8-r", "windows-1251").encode("koi8_r")
    assert read_page(wrong).title != title


def test_japanese_kana_are_never_read_as_korean_letters() -> None:
    # EUC-JP's kana rows decode as Hangul letters by EUC-KR: a reading nobody writes.
    body = JAPANESE[1]
    data = f"<p>{body}</p>".encode("euc_jp")
    text, _ = decoded(data)
    assert body in text


@pytest.mark.parametrize(
    ("encoding", "title", "body"),
    [
        # A short page of katakana reads as Big5 to uchardet.
        ("euc_jp", "プログラマのテキストエディタ", "テキストエディタ は Vi 互換のエディタです。"),
        # A short Ukrainian page reads as Mac Cyrillic to uchardet (`процес≥в`).
        ("cp1251", "top — показ процесів Linux", "top — показ процесів Linux [параметри]"),
        # A middle dot between Hangul words is Korean's own: still read as Korean.
        (
            "euc_kr",
            "서울·부산 노선 개통",
            "새 노선은 서울·부산을 연결하며 팔 분 간격으로 운행된다.",
        ),
    ],
)
def test_a_short_undeclared_page_decodes_to_its_text(encoding: str, title: str, body: str) -> None:
    page = (
        f"<!DOCTYPE html><html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1><p>{body}</p></body></html>"
    )
    assert decoded(page.encode(encoding))[0] == page


def test_ukrainian_in_koi8_u_is_not_read_as_koi8_r() -> None:
    # Where KOI8-U has the Ukrainian letters KOI8-R lacks, KOI8-R has box drawing:
    # symbols inside words.
    title = "Новини Києва"
    body = (
        "У Києві відкрили нову лінію трамвая. Її довжина - сім кілометрів, а їхати нею можна щодня."
    )
    page = f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"
    assert decoded(page.encode("koi8_u"))[0] == page


def test_vowel_points_are_no_symbols_between_letters() -> None:
    # Pointed Hebrew: each point a combining mark between letters, which a reading with
    # symbols inside words would count against Windows-1255.
    title = "בְּרֵאשִׁית בָּרָא אֱלֹהִים"
    body = "בְּרֵאשִׁית בָּרָא אֱלֹהִים אֵת הַשָּׁמַיִם וְאֵת הָאָרֶץ. וְהָאָרֶץ הָיְתָה תֹהוּ וָבֹהוּ."
    page = f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"
    assert decoded(page.encode("cp1255"))[0] == page
