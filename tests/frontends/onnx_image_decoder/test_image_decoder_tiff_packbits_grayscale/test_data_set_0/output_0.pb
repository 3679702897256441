BoutputJ[
-4:)06SZ`P")FLSBHOlryhLRYHOUrxnu{˜ekqagn‹‘˜‡”±gmt‘—“š·½Ä³€†Œª°¶¦¬³ĞÖÜÌ°¶¼¬³¹ÖÜãÒØßü