"""A 30-passage corpus in English, French and Chinese (ten topics each) with known questions.

Small enough to index in a test in well under a second; topics repeat across languages with
different facts, so cross-language matches are plausible but wrong.
"""

from __future__ import annotations

from evalcore.datasets import Passage

EN = [
    ("Refund policy", ("Customers may return any product within 30 days of delivery for a full refund. "
     "The refund is paid to the original card within five business days.")),
    ("Router manual", ("The router's admin page is at 192.168.8.1 in any browser. "
     "The default password is printed on the label under the device.")),
    ("Coffee machine", ("Descale the espresso machine every two months with citric acid. "
     "Hard water blocks the boiler and ruins the taste of the coffee.")),
    ("Bicycle care", ("Oil the bicycle chain after every ride in the rain. "
     "A dry chain wears the gears quickly and makes a squeaking noise.")),
    ("Password policy", ("Employees must use passwords of at least twelve characters. "
     "Passwords are changed only when a leak is suspected.")),
    ("Garden", ("Tomatoes need six hours of direct sunlight a day. "
     "Water the plants at the base in the morning to avoid mildew on the leaves.")),
    ("Office hours", ("The support desk is open from 9:00 to 17:00 on weekdays. "
     "Calls outside these hours go to voicemail and are answered the next morning.")),
    ("Battery", ("The phone battery lasts about eighteen hours of mixed use. "
     "Charging above 80 percent overnight shortens the battery's life.")),
    ("Train travel", ("Night trains from Paris to Vienna leave at 19:05 and arrive at 09:40. "
     "Sleeping cabins hold up to three passengers.")),
    ("Bread baking", ("Let the sourdough rise for twelve hours at room temperature. "
     "Bake the loaf at 240 degrees for forty minutes with steam.")),
]
FR = [
    ("Remboursement", ("Le client peut retourner un produit dans un délai de 14 jours après la livraison. "
     "Le remboursement est effectué sur la carte bancaire utilisée.")),
    ("Manuel du routeur", ("La page d'administration du routeur se trouve à l'adresse 192.168.1.1. "
     "Le mot de passe par défaut figure sur l'étiquette au dos de l'appareil.")),
    ("Machine à café", ("Détartrez la cafetière tous les trois mois avec du vinaigre blanc. "
     "Le calcaire bouche la chaudière et donne un goût amer au café.")),
    ("Vélo", ("Graissez la chaîne du vélo après chaque sortie sous la pluie. "
     "Une chaîne sèche use les pignons et fait du bruit.")),
    ("Sécurité", ("Les mots de passe des employés doivent contenir au moins douze caractères. "
     "Ils ne sont changés qu'en cas de fuite soupçonnée.")),
    ("Jardin", ("Les tomates ont besoin de six heures de soleil direct par jour. "
     "Arrosez le pied des plants le matin pour éviter le mildiou.")),
    ("Horaires", ("Le service client est ouvert du lundi au vendredi de 8 h 30 à 18 h. "
     "Le samedi, seul le chat en ligne répond.")),
    ("Batterie", ("La batterie de la trottinette électrique offre une autonomie de 25 kilomètres. "
     "Une charge complète prend environ quatre heures.")),
    ("Train de nuit", ("Le train de nuit Paris–Nice part à 21 h 10 de la gare d'Austerlitz. "
     "Les couchettes sont vendues par compartiment de quatre ou six places.")),
    ("Pain", ("Le pain au levain doit reposer douze heures avant la cuisson. "
     "Cuisez la miche à 240 degrés pendant quarante minutes.")),
]
ZH = [
    ("退款政策", "顾客在收货后七天内可以无理由退货。退款会在三个工作日内退回原支付账户。"),
    ("路由器手册", "路由器的管理地址是 192.168.0.1，可以在浏览器中打开。默认密码印在设备底部的标签上。"),
    ("咖啡机", "咖啡机每个月需要用柠檬酸除垢一次。水垢会堵塞锅炉并影响咖啡的味道。"),
    ("自行车保养", "雨天骑车后要给自行车链条上油。干燥的链条会加速齿轮磨损。"),
    ("密码规定", "员工的密码至少需要十二个字符。只有在怀疑密码泄露时才需要修改密码。"),
    ("种植番茄", "番茄每天需要六个小时的直射阳光。早上在根部浇水可以避免叶子发霉。"),
    ("客服时间", "客服热线的工作时间是每天早上九点到晚上九点。节假日只提供在线留言服务。"),
    ("手机电池", "这款手机的电池容量是五千毫安时，支持六十五瓦快充。充满电大约需要四十分钟。"),
    ("高铁出行", "北京到上海的高铁最快四个半小时到达。二等座票价大约五百五十元。"),
    ("烤面包", "面团需要在温暖的地方发酵两个小时。烤箱预热到二百度后烤三十分钟。"),
]


def corpus() -> list[Passage]:
    """pids 0-9 English, 10-19 French, 20-29 Chinese; topic = pid % 10."""
    return [Passage(10 * lang + i, text, title)
            for lang, texts in enumerate((EN, FR, ZH)) for i, (title, text) in enumerate(texts)]


# (question, pid of the passage that answers it)
QUESTIONS = [
    ("How many days do I have to return a product for a refund?", 0),
    ("What is the default password of the router?", 1),
    ("How often should I descale the espresso machine?", 2),
    ("Combien de caractères doit contenir un mot de passe ?", 14),
    ("À quelle heure part le train de nuit pour Nice ?", 18),
    ("Combien de temps faut-il pour charger la trottinette ?", 17),
    ("番茄每天需要多少小时的阳光？", 25),
    ("这款手机充满电需要多长时间？", 27),
    ("北京到上海的高铁票价是多少？", 28),
]
