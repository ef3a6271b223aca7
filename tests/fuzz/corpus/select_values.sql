VALUES (1, 'a'), (2, NULL), (3, x'ff');
