"""Stopwords for `coverage` (English, French, Chinese): words that carry no answer content.

Stored as written; `stopwords()` gives them folded (case and accents removed) because coverage
compares folded words.
"""

from __future__ import annotations

from evalcore.language.text import fold
from evalcore.runtime.lazy import once

ENGLISH = ["a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "as",
           "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "cannot",
           "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either", "else", "ever", "every",
           "few", "for", "from", "further", "get", "gets", "got", "had", "has", "have", "having", "he", "her", "here",
           "hers", "herself", "him", "himself", "his", "how", "however", "i", "if", "in", "into", "is", "it", "its",
           "itself", "just", "least", "less", "let", "like", "made", "make", "many", "may", "me", "might", "more",
           "most", "much", "must", "my", "myself", "neither", "no", "nor", "not", "now", "of", "off", "often", "on",
           "once", "one", "only", "or", "other", "others", "otherwise", "our", "ours", "ourselves", "out", "over",
           "own", "per", "perhaps", "please", "quite", "rather", "really", "said", "same", "say", "says", "several",
           "shall", "she", "should", "since", "so", "some", "still", "such", "than", "that", "the", "their", "theirs",
           "them", "themselves", "then", "there", "therefore", "these", "they", "thing", "things", "this", "those",
           "though", "through", "thus", "to", "too", "toward", "towards", "under", "until", "up", "upon", "us", "use",
           "used", "uses", "using", "very", "via", "was", "we", "well", "were", "what", "whatever", "when", "whenever",
           "where", "whereas", "whether", "which", "while", "who", "whoever", "whom", "whose", "why", "will", "with",
           "within", "without", "would", "yes", "yet", "you", "your", "yours", "yourself", "yourselves"]

FRENCH = ["à", "ai", "aie", "aient", "ainsi", "alors", "as", "au", "aucun", "aucune", "auquel", "aura", "aurai",
          "auraient", "aurait", "aussi", "autre", "autres", "aux", "auxquelles", "auxquels", "avaient", "avais",
          "avait", "avant", "avec", "avez", "aviez", "avions", "avoir", "avons", "ayant", "bien", "c", "ça", "car",
          "ce", "ceci", "cela", "celle", "celles", "celui", "cependant", "certain", "certaine", "certains", "ces",
          "cet", "cette", "ceux", "chaque", "chez", "ci", "comme", "comment", "d", "dans", "de", "des", "desquelles",
          "desquels", "dès", "donc", "dont", "du", "duquel", "elle", "elles", "en", "encore", "entre", "es", "est",
          "et", "étaient", "étais", "était", "étant", "été", "êtes", "étiez", "étions", "être", "eu", "eue", "eues",
          "eurent", "eus", "eut", "eux", "fait", "faire", "fois", "font", "furent", "fut", "ici", "il", "ils", "j",
          "je", "jusqu", "jusque", "l", "la", "là", "laquelle", "le", "lequel", "les", "lesquelles", "lesquels", "leur",
          "leurs", "lorsque", "lui", "m", "ma", "mais", "me", "même", "mêmes", "mes", "moi", "moins", "mon", "n", "ne",
          "ni", "non", "nos", "notre", "nous", "on", "ont", "or", "ou", "où", "par", "parce", "pas", "pendant", "peu",
          "peut", "peuvent", "plus", "plutôt", "pour", "pourquoi", "puis", "qu", "quand", "que", "quel", "quelle",
          "quelles", "quels", "qui", "quoi", "s", "sa", "sans", "se", "sera", "serai", "seraient", "serait", "seront",
          "ses", "si", "sien", "sienne", "son", "sont", "sous", "soi", "soit", "sommes", "suis", "sur", "t", "ta",
          "tandis", "te", "tel", "telle", "telles", "tels", "tes", "toi", "ton", "tous", "tout", "toute", "toutes",
          "très", "tu", "un", "une", "unes", "uns", "vers", "voici", "voilà", "vos", "votre", "vous", "y"]

CHINESE = ["的", "了", "是", "在", "和", "与", "及", "或", "也", "都", "就", "而", "又", "还", "但", "但是", "因为",
           "所以", "如果", "虽然", "而且", "并且", "然后", "之", "其", "此", "这", "那", "这个", "那个", "这些", "那些",
           "这里", "那里", "这样", "那样", "什么", "怎么", "怎样", "如何", "为什么", "哪", "哪里", "哪个", "谁", "多少",
           "我", "你", "他", "她", "它", "我们", "你们", "他们", "她们", "它们", "自己", "大家", "有", "没有", "没",
           "不", "很", "更", "最", "太", "被", "把", "给", "对", "向", "从", "到", "于", "以", "为", "为了", "由",
           "由于", "关于", "对于", "按照", "根据", "通过", "可以", "可能", "能", "能够", "会", "要", "应该", "需要",
           "将", "已", "已经", "曾经", "正在", "着", "过", "吗", "呢", "吧", "啊", "呀", "嘛", "个", "些", "每", "各",
           "某", "等", "等等", "其他", "其它", "以及", "一个", "一些", "一种", "上", "下", "中", "里", "内", "外", "时",
           "时候", "后", "以后", "之后", "前", "以前", "之前", "就是", "还是", "只是", "即", "即使", "不过", "并", "却",
           "则", "所", "所有", "地", "得"]

@once
def stopwords() -> frozenset[str]:
    """Every stopword folded, built on first use: folding them took longer than the rest of the metrics' imports,
    which every command pays, coverage or not."""
    return frozenset(fold(word) for word in ENGLISH + FRENCH + CHINESE)
