-- The source database of the example: two tables and a few rows.
CREATE TABLE customers (
    id integer PRIMARY KEY,
    name text NOT NULL,
    email text
);
CREATE TABLE orders (
    id bigint PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES customers,
    amount numeric(12, 2) NOT NULL,
    status text NOT NULL DEFAULT 'new'
);
INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com'), (2, 'Grace', NULL);
INSERT INTO orders VALUES (10, 1, 12.50, 'paid'), (11, 2, 99.00, 'new');
