-- Spend per customer and day over the spark-sink table `purchases` (query.py registers it).
SELECT date,
       user,
       count(*)                AS purchases,
       round(sum(amount), 2)   AS spent,
       min(ts)                 AS first_purchase
FROM purchases
GROUP BY date, user
ORDER BY spent DESC, user
