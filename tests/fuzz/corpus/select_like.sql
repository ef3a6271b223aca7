SELECT b FROM t1 WHERE b LIKE 't%' OR b LIKE '_ne' ESCAPE '\' OR b GLOB 'o*';
