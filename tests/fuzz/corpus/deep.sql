SELECT ((((((((((1)))))))))) + (SELECT (SELECT (SELECT max(a) FROM t1)));
