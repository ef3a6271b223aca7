/* block */ SELECT 1; -- line
SELECT 'unterminated;
