SELECT ?, ?2, :name, @at, $dollar FROM t1 WHERE a = ?1;
